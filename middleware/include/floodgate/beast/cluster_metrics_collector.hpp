// Prometheus metrics of the Redis token source (SPEC §10), for a metrics_handler to serve.
#pragma once

#include <floodgate/cluster/redis_cluster.hpp>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <functional>
#include <vector>

namespace floodgate::beast {

/** Exports the cluster metrics from snapshots of a Redis adapter's state:
    `floodgate_cluster_lease_requests_total{result}`, `floodgate_cluster_redis_round_trip_seconds`,
    `floodgate_cluster_mode{resource, rule, mode}` and
    `floodgate_cluster_lease_passes_spent_total{resource, rule}`.

    Reads only the plain status struct: linking floodgate::redis stays the application's choice.

    @par Thread Safety
    Collect() from any thread, as the status function allows (redis_cluster::status does).
*/
class cluster_metrics_collector final : public prometheus::Collectable {
 public:
  explicit cluster_metrics_collector(std::function<cluster::redis_cluster_status()> status)
      : status_(std::move(status)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::function<cluster::redis_cluster_status()> status_;
};

}  // namespace floodgate::beast

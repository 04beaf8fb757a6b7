#include <floodgate/engine/context.hpp>
#include <floodgate/engine/engine.hpp>

#include "node/node_registry.hpp"

namespace floodgate {

context::context(engine& eng, std::string_view name, std::string_view origin) noexcept
    : engine_(&eng),
      entrance_(eng.nodes().entrance(name)),
      origin_(origin),
      origin_hash_(node::hash_name(origin)) {}

context::context(engine& eng, entrance_handle entrance, std::string_view origin) noexcept
    : engine_(&eng),
      entrance_(entrance.node_),
      origin_(origin),
      origin_hash_(node::hash_name(origin)) {}

std::string_view context::name() const noexcept {
  return entrance_ != nullptr ? std::string_view(entrance_->name()) : std::string_view{};
}

}  // namespace floodgate

// The engine resources of a guard's routes and its context name, resolved once instead of by
// name on every request.
#pragma once

#include <floodgate/beast/route_table.hpp>
#include <floodgate/engine/engine.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string_view>

namespace floodgate::beast::detail {

/** The handle in `slot`, resolved with `resolve()` and kept on first use. An empty handle (a
    cap was reached) is not kept: the next call resolves again, so the engine counts each
    overflow as it would by name. Racing first calls resolve the same node. */
template <class Handle, class Resolve>
Handle resolve_once(std::atomic<Handle>& slot, Resolve&& resolve) noexcept {
  Handle h = slot.load(std::memory_order_acquire);
  if (!h) {
    h = resolve();
    if (h) {
      slot.store(h, std::memory_order_release);
    }
  }
  return h;
}

/** One resource_handle per route of a route_table, plus one for `<unmatched>`, each resolved on
    the route's first request (a route nobody calls never becomes a resource, as by name).

    An empty handle (the resource cap was reached) is not kept: such a route is looked up again
    on every request, so the engine counts each overflow exactly as when entering by name.

    @par Thread Safety
    handle() from any number of threads; racing first requests resolve the same node.
*/
class resource_cache {
 public:
  /// The slot of `<unmatched>`: the index of a route_match that matched nothing.
  static constexpr std::size_t unmatched = route_match::npos;

  /// Slots for route indices `0 .. routes - 1` and for unmatched.
  explicit resource_cache(std::size_t routes)
      : size_(routes), handles_(std::make_unique<std::atomic<resource_handle>[]>(routes + 1)) {}

  resource_cache(const resource_cache& other) : resource_cache(other.size_) {
    for (std::size_t i = 0; i <= size_; ++i) {
      handles_[i].store(other.handles_[i].load(std::memory_order_acquire),
                        std::memory_order_relaxed);
    }
  }
  resource_cache& operator=(const resource_cache&) = delete;

  /** The handle of route `index` (or `unmatched`) named `name`. An index past the slots (a
      route added after the guard was made) is resolved by name each time. */
  resource_handle handle(engine& eng, std::size_t index, std::string_view name) noexcept {
    if (index != unmatched && index >= size_) {
      return eng.resource(name);
    }
    return resolve_once(handles_[index == unmatched ? size_ : index],
                        [&]() noexcept { return eng.resource(name); });
  }

 private:
  static_assert(std::atomic<resource_handle>::is_always_lock_free);

  std::size_t size_;
  std::unique_ptr<std::atomic<resource_handle>[]> handles_;
};

/** The guard's context name, resolved on its first request (so the entrance appears with the
    first request, as by name). An empty handle (the context-name cap was reached) is not kept,
    so each such request is looked up, and counted as overflow, as by name.

    @par Thread Safety
    get() from any number of threads.
*/
class entrance_cache {
 public:
  entrance_cache() = default;
  entrance_cache(const entrance_cache& other) noexcept
      : handle_(other.handle_.load(std::memory_order_acquire)) {}
  entrance_cache& operator=(const entrance_cache&) = delete;

  entrance_handle get(engine& eng, std::string_view name) noexcept {
    return resolve_once(handle_, [&]() noexcept { return eng.entrance(name); });
  }

 private:
  static_assert(std::atomic<entrance_handle>::is_always_lock_free);
  std::atomic<entrance_handle> handle_{};
};

}  // namespace floodgate::beast::detail

// Context: one request or call chain, with its entrance name and origin.
#pragma once

#include <cstdint>
#include <string_view>

namespace floodgate {

class engine;
class entry;
namespace detail {
class engine_impl;
}
namespace node {
class default_node;
class entrance_node;
}  // namespace node

/** One request or call chain (Sentinel's Context), as an explicit value — never thread-local.

    A context names the entrance of the statistics tree (`http-inbound`) and the caller
    (`origin`, may be empty). Entries entered with it nest: an entry entered while another is
    open becomes its child in the tree. A context and its entries may move between threads and
    coroutines, but one context must not be used by two threads at once. It must outlive its
    entries, and the engine must outlive both (an entry exits into the engine's statistics);
    the origin's characters must outlive the context. Entries exit innermost first: an entry
    exited before its children takes them off the context's stack (Sentinel also exits them
    and the parents, and throws); a child exited after that, once new entries were opened, can
    misplace later entries in the tree (every count stays right).

    Past the context-name cap (2000 by default) the context is a "null context": its entries pass
    unchecked and untracked, and the overflow is counted.

    @code
    floodgate::context ctx{eng, "http-inbound", origin};
    if (auto e = eng.enter(ctx, "GET:/users/{id}", {.type = floodgate::entry_type::inbound})) {
      // serve
    }
    @endcode
*/
class context;

/** A context name resolved once (@ref engine::entrance): contexts made from it skip hashing
    and looking up the name. Empty past the context-name cap (its contexts are null contexts).
    Valid for the engine's life. */
class entrance_handle {
 public:
  entrance_handle() noexcept = default;
  explicit operator bool() const noexcept { return node_ != nullptr; }

 private:
  friend class engine;
  friend class context;
  explicit entrance_handle(node::entrance_node* n) noexcept : node_(n) {}
  node::entrance_node* node_ = nullptr;
};

class context {
 public:
  /// Entries nested deeper than this still count, but their tree nodes hang under the node at
  /// this depth.
  static constexpr int max_depth = 16;

  context(engine& eng, std::string_view name, std::string_view origin = {}) noexcept;
  /// A context of a name resolved with engine::entrance(); the cheapest way per request.
  context(engine& eng, entrance_handle entrance, std::string_view origin = {}) noexcept;
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  std::string_view name() const noexcept;
  std::string_view origin() const noexcept { return origin_; }
  bool is_null() const noexcept { return entrance_ == nullptr; }
  /// Number of entries currently open in this context.
  int depth() const noexcept { return depth_; }

 private:
  friend class engine;
  friend class entry;
  friend class detail::engine_impl;

  engine* engine_;
  node::entrance_node* entrance_;
  std::string_view origin_;
  std::uint64_t origin_hash_;
  /// The default node new entries nest under (the innermost open entry's, up to max_depth);
  /// null at the entrance. Each entry keeps the value it found, to restore it on exit.
  node::default_node* current_ = nullptr;
  int depth_ = 0;
};

}  // namespace floodgate

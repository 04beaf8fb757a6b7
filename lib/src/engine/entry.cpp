#include <floodgate/engine/entry.hpp>

#include "engine/engine_impl.hpp"

namespace floodgate {

entry::entry(entry&& other) noexcept { *this = std::move(other); }

entry& entry::operator=(entry&& other) noexcept {
  if (this != &other) {
    exit();
    engine_ = other.engine_;
    ctx_ = other.ctx_;
    cluster_ = other.cluster_;
    node_ = other.node_;
    origin_node_ = other.origin_node_;
    parent_ = other.parent_;
    rules_ = other.rules_;
    snapshot_ = other.snapshot_;
    create_ms_ = other.create_ms_;
    create_ns_ = other.create_ns_;
    precise_ = other.precise_;
    counted_ = other.counted_;
    wait_ns_ = other.wait_ns_;
    acquire_ = other.acquire_;
    pin_stripe_ = other.pin_stripe_;
    pin_slot_ = other.pin_slot_;
    depth_ = other.depth_;
    type_ = other.type_;
    status_ = other.status_;
    error_ = other.error_;
    if (status_ == status::blocked) {
      out_.block = other.out_.block;
    } else {
      out_.tokens = other.out_.tokens;
    }
    other.reset_moved();
  }
  return *this;
}

void entry::reset_moved() noexcept {
  snapshot_ = nullptr;
  status_ = status::empty;
}

void entry::exit() noexcept {
  if (status_ != status::passed) {
    return;
  }
  status_ = status::exited;
  if (engine_ != nullptr) {
    engine_->exit(*this);
  }
}

bool entry::proceed() noexcept {
  if (status_ == status::passed && !counted_ && engine_ != nullptr) {
    return engine_->count_start(*this);
  }
  return !blocked();
}

std::string_view entry::resource() const noexcept {
  return cluster_ != nullptr ? std::string_view(cluster_->name()) : std::string_view{};
}

}  // namespace floodgate

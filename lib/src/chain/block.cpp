#include <floodgate/chain/block.hpp>

namespace floodgate {

std::string_view to_string(block_reason r) noexcept {
  switch (r) {
    case block_reason::flow: return "flow";
    case block_reason::param_flow: return "param_flow";
    case block_reason::degrade: return "degrade";
    case block_reason::system: return "system";
    case block_reason::authority: return "authority";
    case block_reason::custom: return "custom";
  }
  return "custom";
}

std::string_view to_string(system_limit l) noexcept {
  switch (l) {
    case system_limit::none: return "";
    case system_limit::qps: return "qps";
    case system_limit::thread: return "thread";
    case system_limit::rt: return "rt";
    case system_limit::load: return "load";
    case system_limit::cpu: return "cpu";
  }
  return "";
}

}  // namespace floodgate

#include "cluster/redis_connection.hpp"

#include "cluster/socket_wait.hpp"
#include "cluster/tls_channel.hpp"

#include <hiredis/hiredis.h>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace floodgate::cluster::detail {

namespace {

redis_value convert(const redisReply& r) {
  switch (r.type) {
    case REDIS_REPLY_INTEGER:
      return {static_cast<std::int64_t>(r.integer)};
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      return {std::string(r.str, r.len)};
    case REDIS_REPLY_ARRAY: {
      std::vector<redis_value> items;
      items.reserve(r.elements);
      for (std::size_t i = 0; i < r.elements; ++i) {
        items.push_back(convert(*r.element[i]));
      }
      return {std::move(items)};
    }
    default:
      return {};
  }
}

}  // namespace

redis_connection::redis_connection() noexcept = default;
redis_connection::~redis_connection() { close(); }

bool redis_connection::connected() const noexcept {
  return context_ != nullptr || (tls_ && tls_->is_open());
}

void redis_connection::close() noexcept {
  if (context_ != nullptr) {
    redisFree(context_);
    context_ = nullptr;
  }
  tls_.reset();
}

std::string redis_connection::connect(const redis_endpoint& endpoint,
                                      std::chrono::milliseconds timeout) {
  close();
  timeout_ = timeout;
  if (endpoint.tls) {
    tls_ = std::make_unique<tls_channel>();
    if (std::string why = tls_->open(endpoint, timeout); !why.empty()) {
      tls_.reset();
      return why;
    }
  } else {
    redisContext* c =
        redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, to_timeval(timeout));
    if (c == nullptr) {
      return "cannot allocate a Redis context";
    }
    if (c->err != 0) {
      std::string why = c->errstr;
      redisFree(c);
      return "connect to " + endpoint.host + ":" + std::to_string(endpoint.port) + ": " + why;
    }
    // A bound on each read and write besides the command's deadline (plain_round_trip).
    if (redisSetTimeout(c, to_timeval(timeout)) != REDIS_OK) {
      redisFree(c);
      return "cannot set the socket timeout";
    }
    context_ = c;
  }
  auto step = [&](const std::vector<std::string_view>& args) -> std::string {
    const redis_result r = command(args);
    return r.ok() ? std::string() : std::string(args[0]) + ": " + r.error;
  };
  std::string why;
  if (!endpoint.password.empty()) {
    why = endpoint.user.empty() ? step({"AUTH", endpoint.password})
                                : step({"AUTH", endpoint.user, endpoint.password});
  }
  const std::string db = std::to_string(endpoint.db);
  if (why.empty() && endpoint.db != 0) why = step({"SELECT", db});
  if (why.empty()) {
    // A server that is not Redis (or a Redis refusing us) fails here, within the timeout.
    const redis_result r = command({"PING"});
    if (!r.ok()) {
      why = "PING: " + r.error;
    } else if (const auto* s = std::get_if<std::string>(&r.value.v); s == nullptr || *s != "PONG") {
      why = "PING: not answered with PONG (not a Redis server?)";
    }
  }
  if (!why.empty()) close();
  return why;
}

redis_result redis_connection::command(const std::vector<std::string_view>& args) {
  redis_result out;
  if (!connected()) {
    out.error = "not connected";
    out.io = true;
    return out;
  }
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  argv.reserve(args.size());
  lengths.reserve(args.size());
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  redisReply* reply =
      tls_ ? tls_round_trip(argv, lengths, out) : plain_round_trip(argv, lengths, out);
  if (reply == nullptr) {
    if (out.io) close();
    return out;
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    out.error.assign(reply->str, reply->len);
  } else {
    out.value = convert(*reply);
  }
  freeReplyObject(reply);
  return out;
}

redisReply* redis_connection::plain_round_trip(std::vector<const char*>& argv,
                                               const std::vector<std::size_t>& lengths,
                                               redis_result& out) {
  // hiredis's own blocking call bounds each read by the socket timeout, not the reply: a server
  // sending a byte now and then held it for as long as it liked. One deadline for the command
  // and its whole reply; a read is made only when poll says bytes are there, so it never waits.
  const auto until = std::chrono::steady_clock::now() + timeout_;
  auto lost = [&] {
    out.io = true;
    out.error = context_->errstr;
    if (out.error.empty()) out.error = "connection lost";
    return nullptr;
  };
  auto timed_out = [&] {
    out.io = true;
    out.timeout = true;
    out.error = "timed out";
    return nullptr;
  };
  if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(),
                             lengths.data()) != REDIS_OK) {
    return lost();
  }
  for (int done = 0; done == 0;) {
    if (!wait_ready(context_->fd, POLLOUT, until)) return timed_out();
    // A write larger than the room poll saw blocks for the rest: no longer than the deadline.
    const auto left =
        std::chrono::ceil<std::chrono::microseconds>(until - std::chrono::steady_clock::now());
    const timeval bound = to_timeval(std::max(left, std::chrono::microseconds(1)));
    if (::setsockopt(context_->fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound) != 0) {
      return lost();
    }
    if (redisBufferWrite(context_, &done) != REDIS_OK) {
      return errno == EAGAIN || errno == EWOULDBLOCK ? timed_out() : lost();
    }
  }
  for (;;) {
    void* reply = nullptr;
    if (redisGetReplyFromReader(context_, &reply) != REDIS_OK) return lost();
    if (reply != nullptr) return static_cast<redisReply*>(reply);
    if (!wait_ready(context_->fd, POLLIN, until)) return timed_out();
    if (redisBufferRead(context_) != REDIS_OK) return lost();
  }
}

redisReply* redis_connection::tls_round_trip(std::vector<const char*>& argv,
                                             const std::vector<std::size_t>& lengths,
                                             redis_result& out) {
  char* encoded = nullptr;
  const int length =
      redisFormatCommandArgv(&encoded, static_cast<int>(argv.size()), argv.data(), lengths.data());
  if (length < 0 || encoded == nullptr) {
    out.error = "cannot encode the command";  // the connection stays usable
    return nullptr;
  }
  tls_channel::reply r = tls_->round_trip(encoded, static_cast<std::size_t>(length));
  redisFreeCommand(encoded);
  if (r.value == nullptr) {
    out.io = true;
    out.timeout = r.timeout;
    out.error = std::move(r.error);
  }
  return r.value;
}

}  // namespace floodgate::cluster::detail

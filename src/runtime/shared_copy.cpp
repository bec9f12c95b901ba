// A copy cut into pieces that idle helper threads take along with the caller. Only
// atomics are shared, so a helper that wakes late, or a forked child whose helpers are
// gone, can never block or corrupt a copy.
#include "runtime/shared_copy.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <thread>

namespace cyxla {
namespace {

/// Large enough that taking a piece costs nothing beside copying it, small enough that
/// the last pieces end close together.
constexpr size_t kPieceBytes = size_t{256} << 10;
constexpr unsigned kMaxHelpers = 7;
/// The ticket holds the number of pieces and the next piece to take, 32 bits each.
constexpr uint64_t kNextMask = 0xffff'ffffu;

struct Copy {
  std::byte* dst;
  const std::byte* src;
  size_t bytes;
  size_t piece_bytes;
};

/// Never destroyed (trivially destructible, in static storage): helpers sleep on it until
/// the process ends.
struct Helpers {
  /// Whether a copy is being shared now.
  std::atomic<bool> busy{false};
  /// Bumped for each shared copy; helpers wait for it to change.
  std::atomic<uint32_t> generation{0};
  /// (pieces << 32) | next piece. A piece is taken by moving `next` on with a
  /// compare-exchange from the value read, so a thread takes a piece only of the copy that
  /// is current (the value would differ otherwise), and the copy's fields, written before
  /// the ticket was published, are stable until the piece is reported finished.
  std::atomic<uint64_t> ticket{0};
  std::atomic<uint64_t> finished{0};
  Copy copy{};
  pid_t owner = 0;  // the process the helpers run in
  unsigned count = 0;
};

/// Takes pieces of the current copy until none is left.
void take_pieces(Helpers& h) noexcept {
  uint64_t ticket = h.ticket.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t next = ticket & kNextMask;
    if (next >= ticket >> 32) return;
    if (!h.ticket.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
      continue;  // `ticket` holds the current value now
    }
    const Copy& c = h.copy;
    const size_t offset = next * c.piece_bytes;
    std::memcpy(c.dst + offset, c.src + offset, std::min(c.piece_bytes, c.bytes - offset));
    h.finished.fetch_add(1, std::memory_order_acq_rel);
    ticket = h.ticket.load(std::memory_order_acquire);
  }
}

void help(Helpers* h) noexcept {
  uint32_t seen = h->generation.load(std::memory_order_acquire);
  for (;;) {
    h->generation.wait(seen, std::memory_order_acquire);
    seen = h->generation.load(std::memory_order_acquire);
    take_pieces(*h);
  }
}

/// The cores this process may run on.
unsigned usable_cores() noexcept {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

/// The helpers, started by the first call: one per core beside the caller's.
Helpers& started_helpers() noexcept {
  static Helpers h;
  static const bool started = [] {
    h.owner = getpid();
    const unsigned wanted = std::min(usable_cores() - 1, kMaxHelpers);
    for (unsigned i = 0; i < wanted; ++i) {
      try {
        std::thread thread(help, &h);
        pthread_setname_np(thread.native_handle(), "cyxla-copy");
        thread.detach();
        ++h.count;
      } catch (const std::system_error&) {
        break;  // no more threads: copy with those there are
      }
    }
    return true;
  }();
  (void)started;
  return h;
}

}  // namespace

void copy_with_helpers(void* dst, const void* src, size_t bytes) noexcept {
  Helpers& h = started_helpers();
  if (h.count == 0 || h.owner != getpid() || h.busy.exchange(true, std::memory_order_acquire)) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const size_t piece_bytes = std::max(kPieceBytes, bytes / kNextMask + 1);
  const uint64_t pieces = (bytes + piece_bytes - 1) / piece_bytes;
  h.copy = {static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes, piece_bytes};
  h.finished.store(0, std::memory_order_relaxed);
  h.ticket.store(pieces << 32, std::memory_order_release);
  h.generation.fetch_add(1, std::memory_order_release);
  h.generation.notify_all();
  take_pieces(h);
  // What is left is being copied by helpers, a piece each at most.
  while (h.finished.load(std::memory_order_acquire) != pieces) std::this_thread::yield();
  h.busy.store(false, std::memory_order_release);
}

}  // namespace cyxla

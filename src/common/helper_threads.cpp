// The helper threads: pieces of one shared work taken by idle helpers along with the
// caller. Only atomics are shared, so a helper that wakes late, or a forked child whose
// helpers are gone, can never block or corrupt a work.
#include "common/helper_threads.hpp"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

namespace cyxla {
namespace {

constexpr unsigned kMaxHelpers = 7;
/// The ticket holds the number of pieces and the next piece to take, 32 bits each.
constexpr uint64_t kNextMask = kMaxPieces;

struct Work {
  PieceFunction run;
  const void* context;
};

/// Never destroyed (trivially destructible, in static storage): helpers sleep on it until
/// the process ends.
struct Helpers {
  /// Whether a work is being shared now.
  std::atomic<bool> busy{false};
  /// Bumped for each shared work; helpers wait for it to change.
  std::atomic<uint32_t> generation{0};
  /// (pieces << 32) | next piece. A piece is taken by moving `next` on with a
  /// compare-exchange from the value read, so a thread takes a piece only of the work that
  /// is current (the value would differ otherwise), and the work's fields, written before
  /// the ticket was published, are stable until the piece is reported finished.
  std::atomic<uint64_t> ticket{0};
  std::atomic<uint64_t> finished{0};
  std::atomic<bool> failed{false};
  Work work{};
  pid_t owner = 0;  // the process the helpers run in
  unsigned count = 0;
};

/// Takes pieces of the current work until none is left.
void take_pieces(Helpers& h) noexcept {
  uint64_t ticket = h.ticket.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t next = ticket & kNextMask;
    if (next >= ticket >> 32) return;
    if (!h.ticket.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
      continue;  // `ticket` holds the current value now
    }
    if (!h.work.run(h.work.context, next)) h.failed.store(true, std::memory_order_relaxed);
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
        pthread_setname_np(thread.native_handle(), "cyxla-helper");
        thread.detach();
        ++h.count;
      } catch (const std::system_error&) {
        break;  // no more threads: share with those there are
      }
    }
    return true;
  }();
  (void)started;
  return h;
}

bool run_alone(PieceFunction run, const void* context, uint64_t count) noexcept {
  bool ok = true;
  for (uint64_t i = 0; i < count; ++i) ok = run(context, i) && ok;
  return ok;
}

}  // namespace

bool share_pieces(PieceFunction run, const void* context, uint64_t count) noexcept {
  if (count <= 1 || count > kMaxPieces) return run_alone(run, context, count);
  Helpers& h = started_helpers();
  if (h.count == 0 || h.owner != getpid() || h.busy.exchange(true, std::memory_order_acquire)) {
    return run_alone(run, context, count);
  }
  h.work = {run, context};
  h.failed.store(false, std::memory_order_relaxed);
  h.finished.store(0, std::memory_order_relaxed);
  h.ticket.store(count << 32, std::memory_order_release);
  h.generation.fetch_add(1, std::memory_order_release);
  h.generation.notify_all();
  take_pieces(h);
  // What is left is being run by helpers, a piece each at most.
  while (h.finished.load(std::memory_order_acquire) != count) std::this_thread::yield();
  const bool ok = !h.failed.load(std::memory_order_relaxed);
  h.busy.store(false, std::memory_order_release);
  return ok;
}

}  // namespace cyxla

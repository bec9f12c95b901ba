// Recycled aligned blocks behind NumPy arrays: a capsule owns each block while arrays use
// it, and its destructor hands the block back for the next call.
#include "python/output_memory.hpp"

#include <nanobind/ndarray.h>

#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "runtime/host_memory.hpp"

namespace nb = nanobind;

namespace cyxla::python {
namespace {

struct Free {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};

struct Block {
  std::unique_ptr<std::byte, Free> memory;
  size_t capacity = 0;  // round_up of the bytes asked for
};

/// The kept blocks. Capsule destructors may run in any thread, hence the lock.
class Kept {
 public:
  Kept() { blocks_.reserve(kKeptBlocks); }

  Block take(size_t bytes) {
    const size_t capacity = round_up(bytes);
    {
      std::lock_guard lock(mutex_);
      // The newest first: the one a loop's previous call gave back, warm in the cache.
      for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
        if (it->capacity == capacity) {
          Block block = std::move(*it);
          blocks_.erase(std::next(it).base());
          kept_bytes_ -= capacity;
          return block;
        }
      }
    }
    Block block{std::unique_ptr<std::byte, Free>(static_cast<std::byte*>(allocate_aligned(bytes))),
                capacity};
    if (block.memory == nullptr) throw std::bad_alloc();
    return block;
  }

  void give_back(Block block) noexcept {
    if (block.capacity > kKeptBytes) return;  // freed here
    std::lock_guard lock(mutex_);
    // Room is made by freeing the oldest blocks: sizes a process stopped asking for must
    // not keep the ones it asks for now from being kept.
    while (blocks_.size() == kKeptBlocks || kept_bytes_ + block.capacity > kKeptBytes) {
      kept_bytes_ -= blocks_.front().capacity;
      blocks_.erase(blocks_.begin());
    }
    kept_bytes_ += block.capacity;
    blocks_.push_back(std::move(block));  // capacity reserved: does not allocate
  }

 private:
  std::mutex mutex_;
  std::vector<Block> blocks_;
  size_t kept_bytes_ = 0;
};

/// Shared with every capsule, so that blocks outliving the module's statics still have
/// somewhere to go.
std::shared_ptr<Kept> kept() {
  static const std::shared_ptr<Kept> instance = std::make_shared<Kept>();
  return instance;
}

/// What a capsule owns: one block, and where it goes back to.
struct Lease {
  std::shared_ptr<Kept> home;
  Block block;
  Lease(std::shared_ptr<Kept> kept, Block taken) : home(std::move(kept)), block(std::move(taken)) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { home->give_back(std::move(block)); }
};

}  // namespace

nb::object recycled_bytes(size_t bytes) {
  // An empty array still gets a real (aligned) address: 1 byte, never read.
  std::shared_ptr<Kept> home = kept();
  Block block = home->take(bytes == 0 ? 1 : bytes);
  auto lease = std::make_unique<Lease>(std::move(home), std::move(block));
  void* data = lease->block.memory.get();
  nb::capsule owner(lease.get(), [](void* p) noexcept {
    std::unique_ptr<Lease>(static_cast<Lease*>(p));  // gives the block back
  });
  lease.release();  // the capsule owns it now
  const size_t shape[1] = {bytes};
  return nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(data, 1, shape, owner).cast();
}

}  // namespace cyxla::python

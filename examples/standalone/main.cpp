// Runs a program that Python exported (examples/standalone/export.py) from a pool of
// threads, with no Python in the process, and checks every result against the outputs
// jax.jit computed at export time.
//
//   CYXLA_PJRT_PLUGIN=/path/to/plugin.so ./standalone DIRECTORY [THREADS] [ROUNDS]
//   ./standalone DIRECTORY --bench [CALLS]   one thread: the median time of one call
#include <cyxla/cyxla.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::vector<float> read_floats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

bool close_to(std::span<const float> got, std::span<const float> want) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-5f + 1e-5f * std::fabs(want[i]))) return false;
  }
  return true;
}

/// Whether any libpython is mapped into this process.
bool python_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libpython") != std::string::npos) return true;
  }
  return false;
}

/// The peak resident set of this process, from /proc/self/status (VmHWM).
long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

/// Median nanoseconds of one call over rounds of `calls` calls on this thread.
double median_call_ns(const cyxla::native::Program& program, const cyxla_Input& input,
                      void* output, unsigned calls) {
  constexpr int kRounds = 5;
  std::vector<double> rounds;
  for (int r = 0; r < kRounds; ++r) {
    const auto start = Clock::now();
    for (unsigned c = 0; c < calls; ++c) program.execute({input}, {output});
    const std::chrono::duration<double, std::nano> elapsed = Clock::now() - start;
    rounds.push_back(elapsed.count() / calls);
  }
  std::ranges::sort(rounds);
  return rounds[kRounds / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIRECTORY [THREADS [ROUNDS] | --bench [CALLS]]\n", argv[0]);
    return 2;
  }
  const std::string directory = argv[1];
  const bool bench = argc > 2 && std::string(argv[2]) == "--bench";
  const unsigned threads = argc > 2 && !bench ? std::stoul(argv[2]) : 4;
  const unsigned rounds = argc > 3 ? std::stoul(argv[3]) : 3;  // or, with --bench, calls

  // The plugin of $CYXLA_PJRT_PLUGIN, with cyxla's default client options for the CPU:
  // one device, and each run in the calling thread (the pool's threads).
  cyxla::native::Runtime runtime;
  const auto program = cyxla::native::Program::load(directory + "/mlp.cyxla");
  const std::vector<float> inputs = read_floats(directory + "/inputs.f32");
  const std::vector<float> expected = read_floats(directory + "/expected.f32");
  const size_t in_floats = program.input_bytes(0) / sizeof(float);
  const size_t out_floats = program.output_bytes(0) / sizeof(float);
  const size_t samples = inputs.size() / in_floats;
  if (samples == 0 || expected.size() != samples * out_floats) {
    throw std::runtime_error("the data files do not match the program's shapes");
  }

  // The first result, timed for `cyxla bench`-style figures (process start to result).
  {
    cyxla::native::HostArray x(program.input_bytes(0)), y(program.output_bytes(0));
    std::memcpy(x.data(), inputs.data(), x.nbytes());
    program.execute({x.input(program.input_type(0))}, {y.data()});
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    std::printf("first_result_unix_ns %lld\n",
                static_cast<long long>(std::chrono::nanoseconds(now).count()));
    if (!close_to(y.as<float>(), {expected.data(), out_floats})) {
      throw std::runtime_error("the first result differs from jax.jit's");
    }
    if (bench) {
      const unsigned calls = argc > 3 ? rounds : 2000;
      std::printf("per_call_ns %.1f\n",
                  median_call_ns(program, x.input(program.input_type(0)), y.data(), calls));
    }
  }

  // The thread pool: each thread runs its share of the samples, every round, into its own
  // aligned buffers (read in place on the CPU), and checks each result.
  std::atomic<size_t> checked{0}, wrong{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < (bench ? 0 : threads); ++t) {
    pool.emplace_back([&, t] {
      cyxla::native::HostArray x(program.input_bytes(0)), y(program.output_bytes(0));
      for (unsigned r = 0; r < rounds; ++r) {
        for (size_t s = t; s < samples; s += threads) {
          std::memcpy(x.data(), inputs.data() + s * in_floats, x.nbytes());
          program.execute({x.input(program.input_type(0))}, {y.data()});
          if (!close_to(y.as<float>(), {expected.data() + s * out_floats, out_floats})) ++wrong;
          ++checked;
        }
      }
    });
  }
  for (std::thread& thread : pool) thread.join();

  std::printf("checked %zu results on %u threads, %zu differ from jax.jit\n", checked.load(),
              bench ? 0u : threads, wrong.load());
  std::printf("libpython mapped: %s\n", python_mapped() ? "yes" : "no");
  std::printf("peak_rss_kib %ld\n", peak_rss_kib());
  return wrong == 0 && !python_mapped() ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "standalone: %s\n", e.what());
  return 1;
}

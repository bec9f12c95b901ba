// The plugin's compiled kernels loaded into this process: every object of a compiled
// form laid out in one mapping, its symbols resolved, its relocations applied and its
// pages protected, so that a kernel is a function pointer away. x86-64 Linux only.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "compiled/runner_verdict.hpp"

namespace cyxla::kernels {

namespace detail {

/// One anonymous mapping that owns its pages: unmapped when destroyed; movable, not
/// copyable.
class Mapping {
 public:
  Mapping() = default;
  /// `bytes` (a whole number of pages, not 0) mapped readable and writable, zero-filled;
  /// throws cyxla::Error (Pjrt) when the system refuses.
  explicit Mapping(size_t bytes);
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();

  std::byte* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace detail

/// Every object of a compiled form, loaded: code on read-and-execute pages, read-only data
/// (with the GOT) on read-only pages, writable data on writable pages, all in one
/// mapping that lives as long as this does. Nothing in it runs until a caller calls a
/// kernel; no unwinding tables are loaded (nothing unwinds through a kernel).
class LoadedCode {
 public:
  /// The objects of `form` loaded and linked against each other and the host's symbols
  /// (compiled::is_host_symbol). Throws cyxla::Error (Pjrt) whose message says why, as a
  /// reason a program runs on PJRT: "its object 'X' needs the symbol 'sinq', which this
  /// process does not provide". Any host other than x86-64 Linux is refused.
  static LoadedCode load(const compiled::CompiledForm& form);

  LoadedCode(LoadedCode&&) noexcept = default;
  LoadedCode& operator=(LoadedCode&&) noexcept = default;
  LoadedCode(const LoadedCode&) = delete;
  LoadedCode& operator=(const LoadedCode&) = delete;
  ~LoadedCode() = default;

  /// The address of the global or weak symbol `name` the objects define (a kernel, by
  /// CpuExecutable::symbols[k].name), or null when none does.
  void* symbol(std::string_view name) const noexcept;

  /// The bytes mapped for the objects, their GOT and stubs: a whole number of pages (0
  /// when the objects had nothing to load).
  size_t mapped_bytes() const noexcept { return mapping_.size(); }

 private:
  LoadedCode() = default;

  detail::Mapping mapping_;
  std::map<std::string, void*, std::less<>> symbols_;
};

}  // namespace cyxla::kernels

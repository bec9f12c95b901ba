// Owning handles for the PJRT objects cyxla creates: each destroys its object through
// the plugin that made it, exactly once.
#pragma once

#include <type_traits>
#include <utility>

#include "pjrt/pjrt_c_api.h"

namespace cyxla::pjrt {

/// Owns a `T*` and destroys it with `Destroy`, whose args struct has the object at `Field`.
template <class T, class Args, auto Destroy, auto Field>
class Handle {
 public:
  Handle() noexcept = default;
  Handle(const PJRT_Api* api, T* object) noexcept : api_(api), object_(object) {}
  Handle(Handle&& other) noexcept
      : api_(other.api_), object_(std::exchange(other.object_, nullptr)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      api_ = other.api_;
      object_ = std::exchange(other.object_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  T* get() const noexcept { return object_; }
  const PJRT_Api* api() const noexcept { return api_; }
  explicit operator bool() const noexcept { return object_ != nullptr; }

  void reset() noexcept {
    if (object_ == nullptr) return;
    Args args{};
    args.struct_size = cyxla_pjrt_struct_size(&args);
    args.*Field = std::exchange(object_, nullptr);
    if constexpr (std::is_void_v<decltype((api_->*Destroy)(&args))>) {
      (api_->*Destroy)(&args);
    } else {
      // A failed destroy leaves nothing for us to free: its error is dropped by its owner.
      Handle<PJRT_Error, PJRT_Error_Destroy_Args, &PJRT_Api::PJRT_Error_Destroy,
             &PJRT_Error_Destroy_Args::error>
          dropped(api_, (api_->*Destroy)(&args));
    }
  }

 private:
  const PJRT_Api* api_ = nullptr;
  T* object_ = nullptr;
};

/// Owns a PJRT_Error from the moment a plugin function returns it.
using OwnedError = Handle<PJRT_Error, PJRT_Error_Destroy_Args, &PJRT_Api::PJRT_Error_Destroy,
                          &PJRT_Error_Destroy_Args::error>;
using Client = Handle<PJRT_Client, PJRT_Client_Destroy_Args, &PJRT_Api::PJRT_Client_Destroy,
                      &PJRT_Client_Destroy_Args::client>;
using LoadedExecutable =
    Handle<PJRT_LoadedExecutable, PJRT_LoadedExecutable_Destroy_Args,
           &PJRT_Api::PJRT_LoadedExecutable_Destroy,
           &PJRT_LoadedExecutable_Destroy_Args::executable>;
using Executable =
    Handle<PJRT_Executable, PJRT_Executable_Destroy_Args, &PJRT_Api::PJRT_Executable_Destroy,
           &PJRT_Executable_Destroy_Args::executable>;
using Buffer = Handle<PJRT_Buffer, PJRT_Buffer_Destroy_Args, &PJRT_Api::PJRT_Buffer_Destroy,
                      &PJRT_Buffer_Destroy_Args::buffer>;
using Event = Handle<PJRT_Event, PJRT_Event_Destroy_Args, &PJRT_Api::PJRT_Event_Destroy,
                     &PJRT_Event_Destroy_Args::event>;

}  // namespace cyxla::pjrt

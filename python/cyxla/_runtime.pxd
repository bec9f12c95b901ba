# cyxla's native API (cyxla/cyxla.h) for Cython modules:
#
#     from cython.cimports.cyxla._runtime import ABI_VERSION, Input, ProgramSpec, execute
#
# Build with the directories of cyxla.get_include() (headers for the C compiler, the
# second for Cython's -I), and call cyxla.check_abi(ABI_VERSION) at import.

from libc.stdint cimport int64_t, uint32_t, uint64_t

from cyxla._pjrt cimport PJRT_Buffer_Type


cdef extern from "cyxla/cyxla.h" nogil:
    enum:
        ABI_VERSION "CYXLA_ABI_VERSION"
        HOST_ALIGNMENT "CYXLA_HOST_ALIGNMENT"

    ctypedef enum Status "cyxla_Status":
        OK "CYXLA_OK"
        ERROR_INVALID_ARGUMENT "CYXLA_ERROR_INVALID_ARGUMENT"
        ERROR_TYPE_MISMATCH "CYXLA_ERROR_TYPE_MISMATCH"
        ERROR_RELEASED "CYXLA_ERROR_RELEASED"
        ERROR_PJRT "CYXLA_ERROR_PJRT"
        ERROR_INTERNAL "CYXLA_ERROR_INTERNAL"
        ERROR_BUSY "CYXLA_ERROR_BUSY"
        ERROR_PROGRAM_FILE "CYXLA_ERROR_PROGRAM_FILE"

    ctypedef enum OptionType "cyxla_OptionType":
        OPTION_STRING "CYXLA_OPTION_STRING"
        OPTION_INT64 "CYXLA_OPTION_INT64"
        OPTION_FLOAT "CYXLA_OPTION_FLOAT"
        OPTION_BOOL "CYXLA_OPTION_BOOL"

    ctypedef struct ClientOption "cyxla_ClientOption":
        const char* name
        OptionType type
        const char* string_value
        int64_t int64_value
        double float_value

    ctypedef struct RuntimeOptions "cyxla_RuntimeOptions":
        size_t struct_size
        const char* plugin_path
        const ClientOption* client_options
        size_t num_client_options

    ctypedef struct Error "cyxla_Error":
        Status status
        char message[512]

    ctypedef struct Input "cyxla_Input":
        const void* data
        PJRT_Buffer_Type type
        size_t nbytes

    ctypedef struct ProgramSpec "cyxla_ProgramSpec":
        size_t struct_size
        uint64_t executable
        size_t num_inputs
        size_t num_outputs
        const PJRT_Buffer_Type* input_types
        const size_t* input_ranks
        const int64_t* const* input_dims
        const size_t* input_bytes
        const PJRT_Buffer_Type* output_types
        const size_t* output_ranks
        const int64_t* const* output_dims
        const size_t* output_bytes
        # ABI version 2: a batched executable's sizes, ascending (0 and NULL otherwise).
        size_t num_batch_sizes
        const size_t* batch_sizes

    Status get_spec "cyxla_get_spec"(uint64_t handle, ProgramSpec* spec, Error* error)
    void release_spec "cyxla_release_spec"(ProgramSpec* spec)
    Status execute "cyxla_execute"(
        const ProgramSpec* spec, const Input* inputs, size_t num_inputs,
        void* const* outputs, size_t num_outputs, Error* error)
    void* aligned_memory "cyxla_aligned_memory"(size_t nbytes)
    void free_aligned "cyxla_free_aligned"(void* pointer)
    Status execute_batch "cyxla_execute_batch"(
        const ProgramSpec* spec, size_t n, const Input* inputs, size_t num_inputs,
        void* const* outputs, size_t num_outputs, Error* error)
    Status bind "cyxla_bind"(
        const ProgramSpec* spec, const Input* inputs, size_t num_inputs,
        void* const* outputs, size_t num_outputs, uint64_t* bound, Error* error)
    Status call_bound "cyxla_call_bound"(uint64_t bound, Error* error)
    Status unbind "cyxla_unbind"(uint64_t bound, Error* error)
    Status open_runtime "cyxla_open_runtime"(const RuntimeOptions* options, Error* error)
    void close_runtime "cyxla_close_runtime"()
    Status load_program "cyxla_load_program"(const char* path, uint64_t* handle, Error* error)
    void release_program "cyxla_release_program"(uint64_t handle)
    Status register_ffi_handler "cyxla_register_ffi_handler"(
        const char* target, void* handler, const char* platform, uint32_t traits, Error* error)


cdef extern from "cyxla/cyxla.h":
    # Imports the function table now (it is otherwise imported on first use, which takes
    # the GIL once); call it at module import.
    int import_runtime "cyxla_import"() except -1

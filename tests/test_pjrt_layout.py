"""Proves cyxla's own PJRT declarations against the real CPU plugin.

A C program, compiled here against the header that cyxla installs, dlopens the plugin
and reports what it sees through our `PJRT_Api` layout. Beyond sizes and non-null slots,
it calls a few slots through our table (client creation, its error path, the platform
name), which only works if those slots sit at the offsets the plugin filled in.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support import compile_c, installed_header, plugin_library, private_pjrt_header

# The pieces of our header that the probe is generated from.
_FUNCTION = re.compile(r"^CYXLA_PJRT_FUNCTION\((\w+)\)", re.M)
_VOID_FUNCTION = re.compile(r"^typedef void (PJRT_\w+)\(PJRT_\w+_Args\* args\);", re.M)
_UNUSED = re.compile(r"^CYXLA_PJRT_UNUSED\((\w+)\)", re.M)
_SLOT = re.compile(r"^\s*CYXLA_PJRT_SLOT\((\w+)\)", re.M)
_MINOR = re.compile(r"^#define CYXLA_PJRT_API_MINOR (\d+)", re.M)
_STRUCT_SIZE = re.compile(r"^CYXLA_PJRT_STRUCT_SIZE\((\w+), \w+\)", re.M)

# The struct_size of each struct that cyxla fills, by the header's rule (up to the end of
# the last field, no tail padding), as XLA's pjrt_c_api.h 0.114 counts them. Where this
# differs from sizeof, a plugin of the same version expects these.
STRUCT_SIZES = {
    "PJRT_Extension_Base": 24,
    "PJRT_Api_Version": 24,
    "PJRT_NamedValue": 56,
    "PJRT_Error_Destroy_Args": 24,
    "PJRT_Error_Message_Args": 40,
    "PJRT_Error_GetCode_Args": 28,  # sizeof: 32
    "PJRT_Plugin_Initialize_Args": 16,
    "PJRT_Plugin_Attributes_Args": 32,
    "PJRT_Event_Destroy_Args": 24,
    "PJRT_Event_Await_Args": 24,
    "PJRT_Client_Create_Args": 88,
    "PJRT_Client_Destroy_Args": 24,
    "PJRT_Client_PlatformName_Args": 40,
    "PJRT_Client_PlatformVersion_Args": 40,
    "PJRT_Client_AddressableDevices_Args": 40,
    "PJRT_Program": 48,
    "PJRT_Client_Compile_Args": 56,
    "PJRT_Client_BufferFromHostBuffer_Args": 120,
    "PJRT_Device_GetDescription_Args": 32,
    "PJRT_DeviceDescription_Kind_Args": 40,
    "PJRT_Executable_Destroy_Args": 24,
    "PJRT_Executable_NumOutputs_Args": 32,
    "PJRT_Executable_Serialize_Args": 56,
    "PJRT_Executable_OutputElementTypes_Args": 40,
    "PJRT_Executable_OutputDimensions_Args": 48,
    "PJRT_Executable_Fingerprint_Args": 40,
    "PJRT_Executable_OptimizedProgram_Args": 32,
    "PJRT_Executable_ParameterMemoryKinds_Args": 48,
    "PJRT_LoadedExecutable_Destroy_Args": 24,
    "PJRT_LoadedExecutable_GetExecutable_Args": 32,
    "PJRT_ExecuteOptions": 144,
    "PJRT_LoadedExecutable_Execute_Args": 80,
    "PJRT_Executable_DeserializeAndLoad_Args": 72,
    "PJRT_Buffer_Destroy_Args": 24,
    "PJRT_Buffer_ElementType_Args": 28,
    "PJRT_Buffer_Dimensions_Args": 40,
    "PJRT_Buffer_ToHostBuffer_Args": 56,
    "PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args": 32,
    "PJRT_FFI_Register_Handler_Args": 52,  # sizeof: 56
}

_PROBE_MAIN = r"""
#define ARGS(type, name) \
  type name; memset(&name, 0, sizeof name); name.struct_size = type##_STRUCT_SIZE

static void report_error(const PJRT_Api* api, PJRT_Error* error, const char* what) {
  ARGS(PJRT_Error_Message_Args, message);
  message.error = error;
  api->PJRT_Error_Message(&message);
  ARGS(PJRT_Error_GetCode_Args, code);
  code.error = error;
  PJRT_Error* failed = api->PJRT_Error_GetCode(&code);
  printf("error %s %d %.*s\n", what, failed == NULL ? (int)code.code : -1,
         (int)message.message_size, message.message);
  ARGS(PJRT_Error_Destroy_Args, destroy);
  destroy.error = error;
  api->PJRT_Error_Destroy(&destroy);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) { printf("dlopen %s\n", dlerror()); return 3; }
  PJRT_GetPjrtApi get_api = (PJRT_GetPjrtApi)dlsym(library, "GetPjrtApi");
  if (get_api == NULL) return 4;
  const PJRT_Api* api = get_api();
  printf("api_sizeof %zu\n", sizeof(PJRT_Api));
  printf("api_struct_size %zu\n", api->struct_size);
  printf("version %d %d\n", api->pjrt_api_version.major_version,
         api->pjrt_api_version.minor_version);
  report_slots(api);
  printf("ffi_sizeof %zu\n", sizeof(PJRT_FFI_Extension));
  printf("ffi_type %d\n", (int)PJRT_Extension_Type_FFI);
  for (const PJRT_Extension_Base* e = api->extension_start; e != NULL; e = e->next) {
    printf("extension %d %zu\n", (int)e->type, e->struct_size);
  }

  /* Calls through our table: each checks that a slot holds the function we name. */
  ARGS(PJRT_Plugin_Initialize_Args, init);
  if (api->PJRT_Plugin_Initialize(&init) != NULL) return 5;
  ARGS(PJRT_Plugin_Attributes_Args, attributes);
  if (api->PJRT_Plugin_Attributes(&attributes) != NULL) return 6;
  for (size_t i = 0; i < attributes.num_attributes; ++i) {
    printf("attribute %.*s\n", (int)attributes.attributes[i].name_size,
           attributes.attributes[i].name);
  }

  /* An option the CPU client does not know: exercises the error slots. */
  PJRT_NamedValue bogus;
  memset(&bogus, 0, sizeof bogus);
  bogus.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  bogus.name = "cyxla_no_such_option";
  bogus.name_size = strlen(bogus.name);
  bogus.type = PJRT_NamedValue_kInt64;
  bogus.int64_value = 1;
  bogus.value_size = 1;
  ARGS(PJRT_Client_Create_Args, rejected);
  rejected.create_options = &bogus;
  rejected.num_options = 1;
  PJRT_Error* error = api->PJRT_Client_Create(&rejected);
  if (error == NULL) return 7;
  report_error(api, error, "client_create");

  ARGS(PJRT_Client_Create_Args, create);
  error = api->PJRT_Client_Create(&create);
  if (error != NULL) { report_error(api, error, "client_create_default"); return 8; }
  ARGS(PJRT_Client_PlatformName_Args, name);
  name.client = create.client;
  if (api->PJRT_Client_PlatformName(&name) != NULL) return 9;
  printf("platform %.*s\n", (int)name.platform_name_size, name.platform_name);
  ARGS(PJRT_Client_AddressableDevices_Args, devices);
  devices.client = create.client;
  if (api->PJRT_Client_AddressableDevices(&devices) != NULL) return 10;
  printf("devices %zu\n", devices.num_addressable_devices);
  ARGS(PJRT_Client_Destroy_Args, destroy);
  destroy.client = create.client;
  if (api->PJRT_Client_Destroy(&destroy) != NULL) return 11;
  printf("done\n");
  return 0;
}
"""


@dataclass
class Probe:
    """What the probe program printed, parsed."""

    api_sizeof: int = 0
    api_struct_size: int = 0
    version: tuple[int, int] = (0, 0)
    ffi_sizeof: int = 0
    ffi_type: int = -1
    #: slot name -> (offset in our PJRT_Api, whether the plugin's table has it non-null)
    slots: dict[str, tuple[int, bool]] = field(default_factory=dict)
    #: (type, struct_size) of each extension in the plugin's chain
    extensions: list[tuple[int, int]] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    errors: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: struct name -> (X_STRUCT_SIZE, sizeof(X)) in our header
    struct_sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    platform: str = ""
    devices: int = 0
    done: bool = False


def _probe_source(header_text: str) -> str:
    names = _VOID_FUNCTION.findall(header_text) + _FUNCTION.findall(header_text)
    unused = _UNUSED.findall(header_text)
    lines = [
        "#include <dlfcn.h>",
        "#include <stddef.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        '#include "pjrt/pjrt_c_api.h"',
        "static void report_slots(const PJRT_Api* api) {",
    ]
    for name in _STRUCT_SIZE.findall(header_text):
        lines.append(
            f'  printf("struct_size {name} %zu %zu\\n", (size_t){name}_STRUCT_SIZE, '
            f"sizeof({name}));"
        )
    for name in [*names, *unused]:
        kind = "used" if name in names else "unused"
        lines.append(
            f'  printf("slot {kind} {name} %zu %d\\n", offsetof(PJRT_Api, {name}), '
            f"api->{name} != NULL);"
        )
    lines.append("}")
    return "\n".join(lines) + _PROBE_MAIN


def _parse(stdout: str) -> tuple[Probe, dict[str, str]]:
    probe = Probe()
    kinds: dict[str, str] = {}
    for line in stdout.splitlines():
        key, _, rest = line.partition(" ")
        words = rest.split()
        if key in ("api_sizeof", "api_struct_size", "ffi_sizeof", "ffi_type", "devices"):
            setattr(probe, key, int(rest))
        elif key == "version":
            probe.version = (int(words[0]), int(words[1]))
        elif key == "struct_size":
            probe.struct_sizes[words[0]] = (int(words[1]), int(words[2]))
        elif key == "slot":
            kinds[words[1]] = words[0]
            probe.slots[words[1]] = (int(words[2]), words[3] == "1")
        elif key == "extension":
            probe.extensions.append((int(words[0]), int(words[1])))
        elif key == "attribute":
            probe.attributes.append(rest)
        elif key == "error":
            what, code, message = rest.split(" ", 2)
            probe.errors[what] = (int(code), message)
        elif key == "platform":
            probe.platform = rest
        elif key == "done":
            probe.done = True
    return probe, kinds


@pytest.fixture(scope="module")
def header_text() -> str:
    return private_pjrt_header().read_text()


@pytest.fixture(scope="module")
def probe_run(
    header_text: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Probe, dict[str, str]]:
    directory = tmp_path_factory.mktemp("layout")
    source = directory / "probe.c"
    source.write_text(_probe_source(header_text))
    binary = compile_c(source, directory / "probe")
    result = subprocess.run(
        [str(binary), plugin_library()], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, (result.returncode, result.stdout[-2000:], result.stderr)
    return _parse(result.stdout)


@pytest.fixture(scope="module")
def probe(probe_run: tuple[Probe, dict[str, str]]) -> Probe:
    return probe_run[0]


def test_header_declares_every_slot_once(header_text: str) -> None:
    """The table lists each declared function exactly once, used or placeholder."""
    slots = _SLOT.findall(header_text)
    declared = _VOID_FUNCTION.findall(header_text) + _FUNCTION.findall(header_text)
    unused = _UNUSED.findall(header_text)
    assert len(slots) == len(set(slots))
    assert sorted(slots) == sorted(declared + unused)
    assert not set(declared) & set(unused)


def test_installed_header_is_the_source_header() -> None:
    source = Path(__file__).resolve().parents[1] / "include" / "cyxla" / "element_type.h"
    assert installed_header().read_text() == source.read_text(), (
        "reinstall cyxla: the installed header is stale"
    )
    # The PJRT declarations are private: not installed beside the public headers.
    assert not installed_header().with_name("pjrt_c_api.h").exists()


def test_struct_sizes_follow_the_headers_rule(probe: Probe, header_text: str) -> None:
    """Each X_STRUCT_SIZE counts to the end of the last field, and is pinned."""
    assert sorted(_STRUCT_SIZE.findall(header_text)) == sorted(STRUCT_SIZES)
    sizes = {name: size for name, (size, _) in probe.struct_sizes.items()}
    assert sizes == STRUCT_SIZES
    # Where sizeof adds tail padding, the two differ: the reason for the constants.
    assert probe.struct_sizes["PJRT_Error_GetCode_Args"] == (28, 32)
    assert probe.struct_sizes["PJRT_FFI_Register_Handler_Args"] == (52, 56)


def test_plugin_version_is_one_we_accept(probe: Probe, header_text: str) -> None:
    from cyxla import _core

    match = _MINOR.search(header_text)
    assert match is not None
    assert int(match.group(1)) == _core.PJRT_API_MINOR
    major, minor = probe.version
    assert major == _core.PJRT_API_MAJOR
    assert minor >= _core.OLDEST_PJRT_API_MINOR


def test_our_table_is_a_prefix_of_the_plugins(probe: Probe) -> None:
    assert 0 < probe.api_sizeof <= probe.api_struct_size, (
        f"our PJRT_Api is {probe.api_sizeof} bytes, the plugin's {probe.api_struct_size}"
    )


def test_every_slot_we_call_is_filled(probe_run: tuple[Probe, dict[str, str]]) -> None:
    probe, kinds = probe_run
    used = [name for name, kind in kinds.items() if kind == "used"]
    assert len(used) >= 30  # the two void functions and the CYXLA_PJRT_FUNCTION list
    missing = [name for name in used if not probe.slots[name][1]]
    assert not missing, f"slots we call are null in the plugin's table: {missing}"


def test_slots_are_pointer_sized_and_in_order(probe: Probe) -> None:
    """Offsets grow by one pointer from the version struct on: no padding, no overlap."""
    offsets = sorted(offset for offset, _ in probe.slots.values())
    assert offsets[0] == 8 + 8 + 24  # struct_size, extension_start, PJRT_Api_Version
    assert offsets == list(range(offsets[0], offsets[0] + 8 * len(offsets), 8))
    assert offsets[-1] + 8 == probe.api_sizeof


def test_ffi_extension_size_matches(probe: Probe) -> None:
    sizes = [size for kind, size in probe.extensions if kind == probe.ffi_type]
    assert sizes, f"the plugin has no FFI extension; it has {probe.extensions}"
    assert sizes == [probe.ffi_sizeof], (
        f"the plugin's PJRT_FFI_Extension is {sizes} bytes, ours {probe.ffi_sizeof}"
    )


def test_ffi_extension_type_number(probe: Probe) -> None:
    """XLA numbers the FFI extension 5; our enum must agree to find it in the chain."""
    assert probe.ffi_type == 5


def test_calls_through_our_table_reach_the_right_functions(probe: Probe) -> None:
    assert probe.done
    assert {"xla_version", "stablehlo_current_version"} <= set(probe.attributes)
    code, message = probe.errors["client_create"]
    assert "cyxla_no_such_option" in message
    assert 1 <= code <= 16  # a PJRT_Error_Code
    assert probe.platform.lower() == "cpu"
    assert probe.devices >= 1

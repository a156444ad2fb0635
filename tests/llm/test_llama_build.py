"""The llama.cpp build the tests use cannot take the AMX path that segfaults on CPUs reporting amx_int8."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

# find_spec, not importorskip: importing llama_cpp would load the native library into the pytest process.
if importlib.util.find_spec("llama_cpp") is None:
    pytest.skip("llama-cpp-python is not installed (pip install 'ehrguard[local]')", allow_module_level=True)


@pytest.mark.llama
def test_the_installed_llama_cpp_has_no_amx_kernels():
    # In a child process: loading the native library must not be able to take the test run down with it.
    out = subprocess.run([sys.executable, "-c", "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    features = out.stdout
    assert "AVX2 = 1" in features, features  # built for the machine class, not for an older baseline
    assert "AMX" not in features, f"llama-cpp-python was built with AMX kernels (rebuild with `make install-llama`): {features}"

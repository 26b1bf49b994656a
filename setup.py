"""Build the C++ core, learnsched._core, and the Cython kernel, learnsched._capacity.

Metadata lives in pyproject.toml.
"""

import os
from glob import glob

from Cython.Build import cythonize
from pybind11.setup_helpers import ParallelCompile, Pybind11Extension, build_ext
from setuptools import Extension, setup

ParallelCompile("NPY_NUM_BUILD_JOBS").install()

# Warnings are on for everyone; -Werror only when CI opts in, so a newer compiler
# never breaks a user's `pip install .`.
extra_compile_args = ["-Wall", "-Wextra"]
if os.environ.get("LEARNSCHED_WERROR"):
    extra_compile_args.append("-Werror")

core = Pybind11Extension(
    "learnsched._core",
    sorted(glob("csrc/learnsched/**/*.cpp", recursive=True) + glob("csrc/bindings/*.cpp")),
    include_dirs=["csrc"],
    # Headers too: build_ext rebuilds only when a listed file is newer than the built
    # module, so without them a header edit would leave a stale core in build/.
    depends=sorted(glob("csrc/**/*.hpp", recursive=True)),
    cxx_std=17,
    extra_compile_args=extra_compile_args,
)

# C++ like the core, since pybind11's build_ext passes -std=c++17 to every extension.
capacity = Extension(
    "learnsched._capacity",
    ["learnsched/_capacity.pyx"],
    language="c++",
    extra_compile_args=extra_compile_args,
)

setup(ext_modules=[core, *cythonize([capacity])], cmdclass={"build_ext": build_ext})

"""taskledger's Python binding: `pip install --no-build-isolation ./python` after installing the
C library (cmake --install), with Debian's python3-cffi and python3-setuptools."""

from setuptools import setup

setup(
    name="taskledger",
    version="0.2.0",
    description="Python binding of taskledger, an embeddable task-scheduler core",
    packages=["taskledger"],
    package_data={"taskledger": ["py.typed"]},
    python_requires=">=3.9",
    setup_requires=["cffi>=1.15"],
    install_requires=["cffi>=1.15"],
    cffi_modules=["taskledger/_ffi_build.py:ffibuilder"],
    zip_safe=False,
)

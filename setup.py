"""The package's metadata lives in pyproject.toml; this adds the compiled core (a wheel's default where a
C compiler exists, or ``CSR_MARL_USE_MYPYC=1``) and ships the named scenarios inside a wheel (see
tools/csr_marl_build.py)."""

from csr_marl_build import cmdclass, ext_modules  # on the path: pyproject.toml's backend-path
from setuptools import setup

setup(ext_modules=ext_modules(), cmdclass=cmdclass())

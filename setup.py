"""Python package of intera_rt for catkin (catkin_python_setup() in
CMakeLists.txt).  Outside catkin nothing is installed: scripts/env puts src/
on PYTHONPATH."""

from catkin_pkg.python_setup import generate_distutils_setup
from setuptools import find_packages, setup

PACKAGES = [p for p in find_packages('src')
            if p == 'intera_rt' or p.startswith('intera_rt.')]

setup(**generate_distutils_setup(
    packages=PACKAGES,
    package_dir={'': 'src'},
))

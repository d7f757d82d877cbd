# Shared by scripts/setup and scripts/env (sourced, not executed).
#
# Defines the repository paths, the Debian package list and the "stamp"
# checks that decide whether each setup step is up to date:
#   apt   every package in IR_APT_PACKAGES is installed (dpkg-query)
#   venv  .venv exists and .venv/.requirements.sha == sha256(requirements.txt)
#   msgs  build/gen_py/.gen_msgs.sha == hash of msg/ srv/ action/ and
#         tools/gen_msgs.py (paths and contents)
#   native src/intera_rt/native/.kernels.sha == hash of the kernels' C source,
#         tools/build_native.py and the venv's stamp (a build attempt was made)

IR_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
IR_VENV="$IR_REPO/.venv"
IR_GEN_PY="$IR_REPO/build/gen_py"
IR_REQUIREMENTS="$IR_REPO/requirements.txt"
IR_VENV_STAMP="$IR_VENV/.requirements.sha"
IR_MSGS_STAMP="$IR_GEN_PY/.gen_msgs.sha"
IR_NATIVE_STAMP="$IR_REPO/src/intera_rt/native/.kernels.sha"
IR_SYSTEM_PYTHON=/usr/bin/python3

# Debian 12 packages the project needs (ROS 1 from Debian, not from ROS's
# own apt repository).  cmake, make and g++ are only needed to build the
# package in a catkin workspace (catkin_make's top-level CMake project enables
# C and C++); everything else is needed at run time or by the tests.
IR_APT_PACKAGES=(
    python3-rospy python3-actionlib python3-pykdl python3-rosmaster
    python3-roslaunch python3-rostopic python3-rosservice python3-rosparam
    python3-rosnode rosbash rosout python3-genpy python3-genmsg
    ros-std-msgs ros-geometry-msgs ros-sensor-msgs ros-trajectory-msgs
    ros-actionlib-msgs ros-diagnostic-msgs
    python3-std-msgs python3-geometry-msgs python3-sensor-msgs
    python3-trajectory-msgs python3-actionlib-msgs python3-diagnostic-msgs
    python3-rosgraph-msgs python3-tf2-ros python3-tf2-msgs python3-std-srvs ros-std-srvs
    python3-dynamic-reconfigure libdynamic-reconfigure-config-init-mutex-dev
    catkin cmake make g++
    # the realtime tick's compiled kernels and dynamics (intera_rt.native; tools/build_native.py;
    # Eigen for Pinocchio's headers)
    python3-dev libeigen3-dev
    python3-venv python3-yaml python3-pytest python3-catkin-pkg
    # scripts/sawyer --rviz and its test: RViz, its markers, a virtual X server and Mesa's
    # software OpenGL (llvmpipe) for headless rendering (xauth: xvfb-run)
    rviz python3-visualization-msgs ros-visualization-msgs xvfb xauth libgl1-mesa-dri
    # --backend mujoco: the io node renders the cameras with MuJoCo on headless EGL (Mesa)
    libegl1 libegl-mesa0
)

# Prints the packages of IR_APT_PACKAGES that are not installed (one a line).
ir_apt_missing() {
    local status
    # One dpkg-query call for all packages; unknown packages are reported on
    # stderr and simply do not appear in the output.
    status="$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' \
        "${IR_APT_PACKAGES[@]}" 2>/dev/null || true)"
    # first input: dpkg-query's lines; second: the wanted package names
    printf '%s\n' "${IR_APT_PACKAGES[@]}" | awk '
        NR == FNR { if ($2 == "ii") ok[$1] = 1; next }
        !($1 in ok) { print $1 }' <(printf '%s\n' "$status") -
}

ir_requirements_sha() {
    sha256sum "$IR_REQUIREMENTS" | cut -d' ' -f1
}

# Hash of every file under msg/ srv/ action/ plus tools/gen_msgs.py:
# relative path and content, in a locale-independent order.
ir_msgs_sha() {
    (
        cd "$IR_REPO"
        find msg srv action tools/gen_msgs.py -type f -print0 2>/dev/null \
            | LC_ALL=C sort -z | xargs -0 sha256sum
    ) | sha256sum | cut -d' ' -f1
}

ir_native_sha() {
    (
        cd "$IR_REPO"
        cat src/intera_rt/native/_kernels.c src/intera_rt/native/_dynamics.cpp src/intera_rt/native/_mujoco.c \
            src/intera_rt/native/arith.h src/intera_rt/native/args.h tools/build_native.py \
            "$IR_VENV_STAMP" 2>/dev/null
    ) | sha256sum | cut -d' ' -f1
}

ir_apt_fresh() {
    [ -z "$(ir_apt_missing)" ]
}

ir_venv_fresh() {
    [ -x "$IR_VENV/bin/python" ] && [ -f "$IR_VENV_STAMP" ] \
        && [ "$(cat "$IR_VENV_STAMP")" = "$(ir_requirements_sha)" ]
}

ir_msgs_fresh() {
    [ -d "$IR_GEN_PY" ] && [ -f "$IR_MSGS_STAMP" ] \
        && [ "$(cat "$IR_MSGS_STAMP")" = "$(ir_msgs_sha)" ]
}

ir_native_fresh() {
    [ -f "$IR_NATIVE_STAMP" ] && [ "$(cat "$IR_NATIVE_STAMP")" = "$(ir_native_sha)" ]
}

ir_all_fresh() {
    ir_apt_fresh && ir_venv_fresh && ir_msgs_fresh && ir_native_fresh
}

"""Fast checks of urdf/sawyer.urdf and urdf/sawyer_armnav.urdf (no ROS needed).

The model is parsed with xml.etree only and forward kinematics is computed by
a tiny numpy helper below (compose joint origins, URDF rpy = fixed-axis XYZ,
R = Rz(yaw) Ry(pitch) Rx(roll), then rotate about the joint axis).  The
reference numbers are the ones in docs/robot_contract.md §8/§9 and
docs/sawyer_model.md §12a-§12d.  The project's real kinematics is tested
elsewhere; this helper only exists to validate the URDF figures.
"""

import importlib.util
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from intera_rt import robot  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
URDF = REPO / "urdf" / "sawyer.urdf"
ARMNAV_URDF = REPO / "urdf" / "sawyer_armnav.urdf"
ARMNAV_TOOL = REPO / "tools" / "make_armnav_urdf.py"

ARM_JOINTS = ["right_j%d" % i for i in range(7)]
POS_TOL = 1e-3   # m
QUAT_TOL = 1e-3  # per quaternion component


# --------------------------------------------------------------------------
# Tiny URDF + FK helper (test-only)
# --------------------------------------------------------------------------

def _floats(text, default):
    return np.array([float(v) for v in text.split()]) if text is not None else np.array(default, float)


def rpy_to_matrix(roll, pitch, yaw):
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def axis_angle_to_matrix(axis, angle):
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def matrix_to_quat_xyzw(r):
    """Shepperd's method; returns a unit quaternion (x, y, z, w)."""
    tr = np.trace(r)
    if tr > 0:
        s = 2.0 * math.sqrt(1.0 + tr)
        w, x, y, z = 0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        w, x, y, z = (r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        w, x, y, z = (r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        w, x, y, z = (r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s
    q = np.array([x, y, z, w])
    return q / np.linalg.norm(q)


class Model:
    """Just enough of a URDF for FK: joints keyed by child link."""

    def __init__(self, path):
        self.root = ET.parse(str(path)).getroot()
        self.links = {l.get("name"): l for l in self.root.findall("link")}
        self.joints = {j.get("name"): j for j in self.root.findall("joint")}
        self.by_child = {}
        for j in self.root.findall("joint"):
            origin = j.find("origin")
            xyz = _floats(origin.get("xyz") if origin is not None else None, [0, 0, 0])
            rpy = _floats(origin.get("rpy") if origin is not None else None, [0, 0, 0])
            t = np.eye(4)
            t[:3, :3] = rpy_to_matrix(*rpy)
            t[:3, 3] = xyz
            axis_el = j.find("axis")
            axis = _floats(axis_el.get("xyz") if axis_el is not None else None, [1, 0, 0])
            self.by_child[j.find("child").get("link")] = dict(
                name=j.get("name"), type=j.get("type"), parent=j.find("parent").get("link"),
                origin=t, axis=axis)

    def fk(self, link, q=None, root="base"):
        """4x4 pose of `link` in `root`; q maps joint name -> angle (default 0)."""
        q = q or {}
        t = np.eye(4)
        while link != root:
            j = self.by_child[link]  # KeyError => link not below root
            m = j["origin"].copy()
            if j["type"] in ("revolute", "continuous"):
                rot = np.eye(4)
                rot[:3, :3] = axis_angle_to_matrix(j["axis"], q.get(j["name"], 0.0))
                m = m @ rot
            elif j["type"] != "fixed":
                raise AssertionError("unexpected joint type %s" % j["type"])
            t = m @ t
            link = j["parent"]
        return t


def arm_q(values):
    return dict(zip(ARM_JOINTS, values))


def assert_pose(t, pos, quat=None, what=""):
    got_p = t[:3, 3]
    assert np.allclose(got_p, pos, atol=POS_TOL, rtol=0), \
        "%s position %s != %s" % (what, np.round(got_p, 5), pos)
    if quat is not None:
        got_q = matrix_to_quat_xyzw(t[:3, :3])
        ref = np.asarray(quat, float)
        err = min(np.max(np.abs(got_q - ref)), np.max(np.abs(got_q + ref)))
        assert err <= QUAT_TOL, "%s quaternion %s != %s" % (what, np.round(got_q, 5), quat)


@pytest.fixture(scope="module")
def model():
    return Model(URDF)


@pytest.fixture(scope="module")
def armnav():
    return Model(ARMNAV_URDF)


# --------------------------------------------------------------------------
# Reference figures
# --------------------------------------------------------------------------

NEUTRAL = list(robot.NEUTRAL)
FK_CLIENT = [0.763331, 0.415979, -1.728629, 1.482985, -1.135621, -1.674347, -0.496337]
DEFAULT_WAYPOINT = [0.0, -0.9, 0.0, 1.8, 0.0, -0.9, 0.0]

# robot_contract §9.1: right_hand in base
RIGHT_HAND_FK = [
    ("fk_service_client", FK_CLIENT, (0.4506, 0.1616, 0.2156), (0.704, 0.7102, 0.0024, 0.0019)),
    ("neutral", NEUTRAL, (0.4496, 0.1603, 0.2158), (0.7071, 0.7071, 0.0003, 0.0003)),
    ("default_waypoint", DEFAULT_WAYPOINT, (0.7128, 0.1603, 0.3170), (-0.5417, 0.4545, -0.5417, 0.4545)),
]

# sawyer_model §12d: right_gripper_tip = right_hand + z 0.13562 (gripper not in this model)
GRIPPER_TIP_OFFSET = 0.13562

# sawyer_model §12d, pose at q = 0 (all arm joints and head_pan zero)
ZERO_POSES = [
    ("right_l6", (0.9910, 0.1603, 0.3170), (0.70442, 0.06163, 0.70441, 0.06163)),
    ("right_hand", (1.0155, 0.1603, 0.3170), (-0.54168, 0.45452, -0.54167, 0.45452)),
    ("right_hand_camera", (0.914, 0.1245, 0.27745), None),
    ("right_wrist", (0.881, 0.16041, 0.317), None),
    ("head_camera", (0.0228, 0.0, 0.59307), None),
    ("screen", (0.03, 0.0, 0.4815), None),
]
ZERO_GRIPPER_TIP = (1.15112, 0.1603, 0.317)

# sawyer_model §12d, pose at named pose `neutral`
NEUTRAL_POSES = [
    ("right_l6", (0.44958, 0.1603, 0.24025), (-0.00001, 1.0, 0.0, 0.00039)),
    ("right_hand", (0.4496, 0.1603, 0.21575), (0.7071, 0.70711, 0.00028, 0.00028)),
    ("right_hand_camera", (0.40997, 0.1245, 0.31722), (0.5002, -0.5002, -0.4998, 0.4998)),
    ("right_wrist", (0.44949, 0.16041, 0.35025), None),
]
NEUTRAL_GRIPPER_TIP = (0.4497, 0.1603, 0.08013)

# sawyer_model §12a: joint axes in base at q = 0 (direction, point on axis)
ZERO_AXES = [
    ("right_j0", (0, 0, 1), (0, 0, 0.08)),
    ("right_j1", (0, 1, 0), (0.081, 0.05, 0.317)),
    ("right_j2", (1, 0, 0), (0.221, 0.1925, 0.317)),
    ("right_j3", (0, 1, 0), (0.481, 0.1505, 0.317)),
    ("right_j4", (1, 0, 0), (0.606, 0.024, 0.317)),
    ("right_j5", (0, 1, 0), (0.881, 0.055, 0.317)),
    ("right_j6", (1, 0, 0), (0.991, 0.1603, 0.317)),
    ("head_pan", (0, 0, 1), (0, 0, 0.3765)),
]

# robot_contract §9.2: lower, upper, velocity, effort
LIMITS = {
    "right_j0": (-3.0503, 3.0503, 1.74, 80),
    "right_j1": (-3.8095, 2.2736, 1.328, 80),
    "right_j2": (-3.0426, 3.0426, 1.957, 40),
    "right_j3": (-3.0439, 3.0439, 1.957, 40),
    "right_j4": (-2.9761, 2.9761, 3.485, 9),
    "right_j5": (-2.9761, 2.9761, 3.485, 9),
    "right_j6": (-4.7124, 4.7124, 4.545, 9),
    "head_pan": (-5.0952, 0.9064, 1.8, 8),
}

# robot_contract §8 frames
CONTRACT_LINKS = [
    "base", "torso", "pedestal", "pedestal_feet", "controller_box", "right_arm_base_link",
    "right_l0", "right_l1", "right_l2", "right_l3", "right_l4", "right_l5", "right_l6",
    "right_l1_2", "right_l2_2", "right_l4_2", "right_torso_itb", "right_arm_itb",
    "right_wrist", "right_hand", "right_hand_camera", "head", "screen", "head_camera",
]

# sawyer_model §12b: links without <inertial>
NO_INERTIAL = ["base", "controller_box", "pedestal_feet", "right_wrist", "right_hand_camera",
               "head_camera", "right_hand_camera_optical", "head_camera_optical"]


# --------------------------------------------------------------------------
# (a) right_hand FK against robot_contract §9.1
# --------------------------------------------------------------------------

@pytest.mark.parametrize("label,q,pos,quat", RIGHT_HAND_FK, ids=[r[0] for r in RIGHT_HAND_FK])
def test_right_hand_fk_reference(model, label, q, pos, quat):
    assert_pose(model.fk("right_hand", arm_q(q)), pos, quat, "right_hand@" + label)


# --------------------------------------------------------------------------
# (b) q = 0 frames against sawyer_model §12d (and §12a axes)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("link,pos,quat", ZERO_POSES, ids=[r[0] for r in ZERO_POSES])
def test_zero_pose_frames(model, link, pos, quat):
    assert_pose(model.fk(link, {}), pos, quat, link + "@zero")


def test_zero_pose_gripper_tip(model):
    tip = model.fk("right_hand", {}) @ np.array([0, 0, GRIPPER_TIP_OFFSET, 1.0])
    assert np.allclose(tip[:3], ZERO_GRIPPER_TIP, atol=POS_TOL, rtol=0), tip[:3]


@pytest.mark.parametrize("joint,direction,point", ZERO_AXES, ids=[r[0] for r in ZERO_AXES])
def test_zero_pose_joint_axes(model, joint, direction, point):
    child = model.joints[joint].find("child").get("link")
    t = model.fk(child, {})
    axis = t[:3, :3] @ model.by_child[child]["axis"]
    assert np.allclose(axis, direction, atol=1e-3), axis
    assert np.allclose(t[:3, 3], point, atol=POS_TOL), t[:3, 3]


# --------------------------------------------------------------------------
# (c) neutral pose frames against sawyer_model §12d
# --------------------------------------------------------------------------

@pytest.mark.parametrize("link,pos,quat", NEUTRAL_POSES, ids=[r[0] for r in NEUTRAL_POSES])
def test_neutral_pose_frames(model, link, pos, quat):
    assert_pose(model.fk(link, arm_q(NEUTRAL)), pos, quat, link + "@neutral")


def test_neutral_pose_gripper_tip(model):
    tip = model.fk("right_hand", arm_q(NEUTRAL)) @ np.array([0, 0, GRIPPER_TIP_OFFSET, 1.0])
    assert np.allclose(tip[:3], NEUTRAL_GRIPPER_TIP, atol=POS_TOL, rtol=0), tip[:3]


def test_neutral_is_within_limits(model):
    for name, value in zip(ARM_JOINTS, NEUTRAL):
        limit = model.joints[name].find("limit")
        assert float(limit.get("lower")) <= value <= float(limit.get("upper")), name


def test_head_moves_with_j0_and_head_pan(model):
    # head is a child of right_l0: j0 swings it about base z like head_pan does
    a = model.fk("head_camera", {"right_j0": 0.5})
    b = model.fk("head_camera", {"head_pan": 0.5})
    c = model.fk("head_camera", {})
    assert np.allclose(a, b, atol=1e-12)
    assert not np.allclose(a, c, atol=1e-6)


# --------------------------------------------------------------------------
# (d) limits of the 8 revolute joints against robot_contract §9.2
# --------------------------------------------------------------------------

def test_revolute_joint_set(model):
    revolute = sorted(n for n, j in model.joints.items() if j.get("type") == "revolute")
    assert revolute == sorted(LIMITS)
    assert model.joints["torso_t0"].get("type") == "fixed"


@pytest.mark.parametrize("joint", sorted(LIMITS))
def test_joint_limits(model, joint):
    lower, upper, velocity, effort = LIMITS[joint]
    j = model.joints[joint]
    limit = j.find("limit")
    assert float(limit.get("lower")) == pytest.approx(lower, abs=1e-12)
    assert float(limit.get("upper")) == pytest.approx(upper, abs=1e-12)
    assert float(limit.get("velocity")) == pytest.approx(velocity, abs=1e-12)
    assert float(limit.get("effort")) == pytest.approx(effort, abs=1e-12)
    assert np.allclose(_floats(j.find("axis").get("xyz"), None), [0, 0, 1])
    dyn = j.find("dynamics")
    assert dyn is not None and float(dyn.get("damping")) > 0 and float(dyn.get("friction")) >= 0


# --------------------------------------------------------------------------
# (e) inertials against sawyer_model §12b
# --------------------------------------------------------------------------

def _mass(model, link):
    inertial = model.links[link].find("inertial")
    return float(inertial.find("mass").get("value")) if inertial is not None else 0.0


def test_moving_arm_mass(model):
    total = sum(_mass(model, "right_l%d" % i) for i in range(7))
    assert total == pytest.approx(17.0863, abs=1e-3)
    assert total + _mass(model, "right_arm_base_link") == pytest.approx(19.155, abs=1e-3)


def test_inertial_presence(model):
    for name, link in model.links.items():
        has = link.find("inertial") is not None
        assert has == (name not in NO_INERTIAL), name


def test_inertia_tensors_positive_definite(model):
    for name, link in model.links.items():
        inertial = link.find("inertial")
        if inertial is None or float(inertial.find("mass").get("value")) < 1e-3:
            continue  # massless helper frames carry placeholder 1e-08 tensors
        i = {k: float(v) for k, v in inertial.find("inertia").attrib.items()}
        m = np.array([[i["ixx"], i["ixy"], i["ixz"]],
                      [i["ixy"], i["iyy"], i["iyz"]],
                      [i["ixz"], i["iyz"], i["izz"]]])
        assert np.all(np.linalg.eigvalsh(m) > 0), name


# --------------------------------------------------------------------------
# (f) structure: robot_contract §8 frames, single tree rooted at base
# --------------------------------------------------------------------------

def test_robot_name_and_root(model):
    assert model.root.get("name") == "sawyer"
    children = {j.find("child").get("link") for j in model.joints.values()}
    roots = [l for l in model.links if l not in children]
    assert roots == ["base"]
    assert len(model.by_child) == len(model.joints)  # every link has at most one parent


@pytest.mark.parametrize("link", CONTRACT_LINKS)
def test_contract_link_exists(model, link):
    assert link in model.links
    model.fk(link, {})  # reachable from base


def test_head_is_child_of_right_l0(model):
    assert model.by_child["head"]["parent"] == "right_l0"


def test_visuals_match_collisions(model):
    for name, link in model.links.items():
        collision, visual = link.find("collision"), link.find("visual")
        if collision is None:
            assert visual is None, name
            continue
        assert visual is not None, name
        if name == "screen":
            assert visual.find("geometry/box").get("size") == "0.24 0.14 0.002"
            continue
        vg, cg = visual.find("geometry")[0], collision.find("geometry")[0]
        assert (vg.tag, vg.attrib) == (cg.tag, cg.attrib), name
        assert visual.find("origin").attrib == collision.find("origin").attrib, name


# --------------------------------------------------------------------------
# (g) armnav model: same joints/inertials, strictly larger collision shapes
# --------------------------------------------------------------------------

def _canonical(element):
    return ET.tostring(element, encoding="unicode").strip()


def test_armnav_identical_joints(model, armnav):
    assert armnav.root.get("name") == "sawyer"
    assert sorted(armnav.joints) == sorted(model.joints)
    for name, joint in model.joints.items():
        assert _canonical(armnav.joints[name]) == _canonical(joint), name


def test_armnav_identical_links_and_inertials(model, armnav):
    assert sorted(armnav.links) == sorted(model.links)
    for name, link in model.links.items():
        a, b = link.find("inertial"), armnav.links[name].find("inertial")
        assert (a is None) == (b is None), name
        if a is not None:
            assert _canonical(a) == _canonical(b), name


def _shape_dims(shape):
    if shape.tag == "sphere":
        return [float(shape.get("radius"))]
    if shape.tag == "cylinder":
        return [float(shape.get("radius")), float(shape.get("length"))]
    if shape.tag == "box":
        return [float(v) for v in shape.get("size").split()]
    raise AssertionError("unexpected shape " + shape.tag)


def test_armnav_collisions_larger(model, armnav):
    count = 0
    for name, link in model.links.items():
        small = link.findall("collision")
        big = armnav.links[name].findall("collision")
        assert len(small) == len(big), name
        for s, b in zip(small, big):
            s_shape, b_shape = s.find("geometry")[0], b.find("geometry")[0]
            assert s_shape.tag == b_shape.tag, name
            assert s.find("origin").attrib == b.find("origin").attrib, name
            for ds, db in zip(_shape_dims(s_shape), _shape_dims(b_shape)):
                assert db > ds, name
            count += 1
    assert count == 17


def test_armnav_file_is_up_to_date():
    spec = importlib.util.spec_from_file_location("make_armnav_urdf", str(ARMNAV_TOOL))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    expected = tool.make_armnav(URDF.read_text(encoding="utf-8"))
    assert ARMNAV_URDF.read_text(encoding="utf-8") == expected, \
        "urdf/sawyer_armnav.urdf is stale: run tools/make_armnav_urdf.py"


@pytest.mark.parametrize("joint", sorted(LIMITS))
def test_joint_dynamics_copy_the_drives(model, joint):
    """The URDF's <dynamics> are copies of intera_rt.robot.DRIVES (their one home) for tools
    that read a URDF; the robot model takes the drives from there."""
    from intera_rt.model import RobotModel
    from intera_rt.robot import DRIVES
    dyn = model.joints[joint].find("dynamics")
    assert float(dyn.get("damping")) == DRIVES[joint].damping
    assert float(dyn.get("friction")) == DRIVES[joint].friction
    lim = RobotModel.from_file().limits[joint]
    assert (lim.armature, lim.damping, lim.friction) == tuple(DRIVES[joint])

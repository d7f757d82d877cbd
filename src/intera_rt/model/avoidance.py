"""The collision-avoidance model: the armnav shapes (urdf/sawyer_armnav.urdf, every primitive
of the tight model inflated 5 cm, published as /robot/armnav_robot_description), the pairs
of them avoidance watches, and per call their distances, separating directions and the
joint-space gradients of those distances. No ROS here.

Watched pairs: model.collision.ShapeModel's selection on the armnav shapes (not ``rigid``,
``unused`` — the pedestal's boxes, which seed 000 says avoidance does not use —,
``adjacent`` or ``always``), less the ``unactuated`` pairs (no arm joint changes their
distance: no arm torque could separate them) and those touching ``often`` (in at least
OFTEN of the samples: envelope artefacts of the inflation, not collisions to push from).
`excluded` records each exclusion with its reason. The poses the robot rests in must be
free of avoidance, yet the inflated shapes overlap there: rather than dropping those pairs,
each gets an *allowance* (its largest overlap over the reference poses, head swept, plus
ALLOWANCE_SLACK); only overlap beyond it counts (`allowances` says which pose sets each).

For a watched pair (a, b): `clearance` = signed distance + allowance (m, < 0: overlap beyond
it), `normal` a unit vector from a towards b, `gradient` = ∂distance/∂(right_j0..6) =
(J_b(p_b) − J_a(p_a))ᵀ n at the witness points. hpp-fcl's own normals are not uniform
across shape pairs, so n comes from the witness points, else its normal, else the shape
centres, oriented so that n·(c_b − c_a) ≥ 0. Design notes: docs/model.md.
"""
import copy
import math
import os
from dataclasses import dataclass
from typing import Tuple

import numpy as np
import pinocchio as pin

from intera_rt.native import kernels
from intera_rt.model.collision import (DEFAULT_SAMPLES, DEFAULT_SEED, REFERENCE_POSES,
                                       ShapeModel)
from intera_rt.model.pinocchio_model import pinocchio_models
from intera_rt.model.safe_xml import safe_urdf
from intera_rt.model.shape_growth import ARMNAV_MARGIN
from intera_rt.model.tool import graft, shape_object, welded_shapes
from intera_rt.robot import ARM_JOINTS, HEAD_JOINTS

# Seed 000: the pedestal and controller boxes "are not used by the Motion Controller or
# collision avoidance".
UNUSED_LINKS = ('pedestal', 'controller_box', 'pedestal_feet')
# Pairs whose armnav shapes touch in at least this fraction of the workspace are envelope
# artefacts rather than something to push apart (see the module docstring).
OFTEN = 0.5
HEAD_SWEEP = 61                # head angles tried per reference arm pose for the allowances
# m added to each non-zero allowance, so that resting near a reference pose (a hold's
# tracking error, a few mrad) is not pushed either.
ALLOWANCE_SLACK = 0.002
# velocity_scale's safety zone, in clearance (m beyond the allowance): full speed beyond
# ZONE, none towards a pair at or below PADDING — where the avoidance torques begin.
DEFAULT_PADDING = 0.0
DEFAULT_ZONE = 0.05
CLOSING_RATE = 1e-9            # m/s: a distance shrinking slower than this is not closing
_WITNESS_EPS = 1e-7            # m: closer witness points are taken as one point
_NO_GRADIENTS, _NO_CLEARANCES = np.zeros((0, 7)), np.zeros(0)
# m: the certificates' checks (AvoidanceModel._flagged) are this much wider than the push
# check (less than ALLOWANCE_SLACK, so that at rest poses the push check's flags nothing) and
# the zone's.
PUSH_WIDEN = 0.001
ZONE_WIDEN = 0.02
PLAIN_CHECKS = 10              # calls of the plain check after a certificate that went unused
# m: how far GJK's answer for one pair at one pose may be from another call's (hpp-fcl's
# gjk_tolerance; they differ by ~1e-9 with the guess each starts from): a clearance kept as
# a lower bound is lowered by it
GJK_NOISE = 1e-6


def default_armnav_path():
    """urdf/sawyer_armnav.urdf of this checkout (made by tools/make_armnav_urdf.py)."""
    from intera_rt.model.robot_model import default_urdf_path
    return os.path.join(os.path.dirname(default_urdf_path()), 'sawyer_armnav.urdf')


def default_armnav_xml():
    """The text of default_armnav_path() (the armnav URDF every avoidance stage reads)."""
    with open(default_armnav_path()) as f:
        return f.read()


def shape_links(urdf_xml):
    """The link of each collision shape, in the model's shape order: what bit i of the
    avoidance stage's `objects` field names (cheap: no pair selection)."""
    urdf_xml = safe_urdf(urdf_xml, 'armnav URDF')
    model = pinocchio_models(urdf_xml).full
    geom = pin.buildGeomFromUrdfString(model, urdf_xml, pin.COLLISION)
    return [model.frames[g.parentFrame].name for g in geom.geometryObjects]


class Contact:
    """One watched pair near or beyond its allowance (see the module docstring)."""
    __slots__ = ('pair', 'distance', 'clearance', 'normal', 'gradient', 'point_a', 'point_b')

    def __init__(self, pair, distance, clearance, normal, gradient, point_a, point_b):
        self.pair = pair                # index into AvoidanceModel.pairs
        self.distance = distance        # m, signed (hpp-fcl: < 0 when the shapes overlap)
        self.clearance = clearance      # m: distance + allowance (< 0: overlap beyond it)
        self.normal = normal            # unit vector a → b (3 floats), URDF root frame
        self.gradient = gradient        # ∂distance/∂q_arm (m/rad, array of 7)
        self.point_a, self.point_b = point_a, point_b   # witness points (3 floats each)

    def __repr__(self):
        return 'Contact(pair=%d, clearance=%.4f)' % (self.pair, self.clearance)


class _Certificate:
    """A collision check's certificate (AvoidanceModel._flagged): its wider check (gd, its
    results' isCollision), the motion budget (rad, Σ|Δq|), the pose it last ran at with
    the pairs it flagged there, and whether it has spared a check since."""
    __slots__ = ('gd', 'hits', 'budget', 'ref', 'near', 'used', 'plain')

    def __init__(self, gd, budget):
        self.gd, self.hits, self.budget = gd, [r.isCollision for r in gd.collisionResults], budget
        self.ref, self.near = None, []
        self.used = False           # the certificate spared a check since it was made
        self.plain = 0              # calls left to make the plain check instead


class AvoidanceModel(ShapeModel):
    """The armnav shapes of the arm (+ head) and the pairs collision avoidance watches.

    Args:
        urdf_xml: the armnav URDF text.
        samples, seed: the "always" selection (model.collision).
        reference_poses: {name: (7 arm angles, head angle)} the robot rests in.
        head_sweep: head angles (over its limits) tried at each reference arm pose.
        often: exclude pairs in contact in at least this fraction of the samples (None:
            keep them).
        padding, zone: velocity_scale's safety zone (m of clearance), padding < zone.
    """

    def __init__(self, urdf_xml, samples=DEFAULT_SAMPLES, seed=DEFAULT_SEED,
                 reference_poses=REFERENCE_POSES, head_sweep=HEAD_SWEEP, often=OFTEN,
                 padding=DEFAULT_PADDING, zone=DEFAULT_ZONE):
        padding, zone = float(padding), float(zone)
        if not (math.isfinite(padding) and math.isfinite(zone) and padding < zone):
            raise ValueError('velocity scaling needs finite padding < zone, got padding %r, '
                             'zone %r' % (padding, zone))
        self.padding, self.zone = padding, zone
        super().__init__(urdf_xml, samples, seed, UNUSED_LINKS)
        model = self.model
        objects = self.geom.geometryObjects
        self._set_pairs(self.candidates)
        # Wrappers of the C++ distance results, kept: reading them costs a tenth of
        # fetching them (redone whenever _set_pairs installs new pairs).
        self._dres = list(self.gdata.distanceResults)
        actuated = {self.candidates[k] for k in self._actuated(seed)}
        pairs = []
        for pair in self.candidates:
            if pair not in actuated:
                self.excluded[self._key(pair)] = 'unactuated'
            elif often is not None and self._touch_rate[pair] >= often:
                self.excluded[self._key(pair)] = 'often'
            else:
                pairs.append(pair)
        self.candidates = pairs
        self._set_pairs(pairs)
        n = len(pairs)
        self._dres = list(self.gdata.distanceResults)

        # Allowances: the largest overlap of each pair over the reference poses (GJK's
        # answers differ by ~1e-11 m from call to call: deeper means deeper than that).
        worst = np.zeros(n)
        where = [None] * n
        for name, (arm, head) in reference_poses.items():
            heads = [float(head)]
            if self._head_idx is not None and head_sweep:
                lo, hi = model.lowerPositionLimit[self._head_idx], model.upperPositionLimit[self._head_idx]
                heads += list(np.linspace(lo, hi, head_sweep))
            for h in heads:
                overlap = -self._all_distances(self._config(arm, h))
                deeper = overlap > worst + 1e-9
                worst[deeper] = overlap[deeper]
                for k in np.flatnonzero(deeper):
                    where[k] = (name, h)
        head_joint = model.getJointId(HEAD_JOINTS[0]) if self._head_idx is not None else None
        self.allowance = np.where(worst > 0.0, worst + ALLOWANCE_SLACK, 0.0)
        self.allowances = {}
        for k, (i, j) in enumerate(pairs):
            if where[k] is None:
                continue
            name, h = where[k]
            panned = any(head_joint in model.supports[objects[s].parentJoint] for s in (i, j))
            self.allowances[self.pairs[k]] = (
                float(self.allowance[k]), 'overlap %.4f at %s%s' % (
                    worst[k], name, ' (head %.2f)' % h if panned else ''))

        self._install(pairs)

    def _install(self, pairs):
        """Watch `pairs` (shape indices, self.allowance set for each) from now on: the
        checks, the wrappers the 1 kHz path reads and the joints moving each shape."""
        self._set_pairs(pairs)
        self._dres = list(self.gdata.distanceResults)
        model, objects, zone = self.model, self.geom.geometryObjects, self.zone
        # Two collision checks with per-pair security margins answer "which pairs need a
        # look" in one C++ call: beyond the allowance (the torques) and within the zone.
        # Each comes with its certificate (_flagged): the same check WIDEN m wider, and the
        # joint motion over which what that one leaves out stays out of this one.
        # m a pair's distance can change by per rad of joint motion (Σ|Δq|): each shape's
        # points move by at most the reach (revolute and prismatic joints only).
        self.closing = 2.0 * self._reach() if model.nq == model.nv else math.inf
        budget = 1.0 / self.closing
        self._push = self._check([-a for a in self.allowance], PUSH_WIDEN, PUSH_WIDEN * budget)
        self._zone = self._check([zone - a for a in self.allowance], ZONE_WIDEN,
                                 ZONE_WIDEN * budget)
        self._gd_push, self._gd_zone = self._push[0], self._zone[0]
        self._allowance = self.allowance.tolist()
        self._jac = None

        # Per pair: shape indices, and which arm joints move each shape (the columns of its
        # witness point's Jacobian; none for base-fixed shapes, right_j0 only for the head).
        arm_joint_ids = [model.getJointId(nm) for nm in ARM_JOINTS]
        self._arm_v = self.models.idx_v(ARM_JOINTS)
        joints = [g.parentJoint for g in objects]        # (each wrapper fetched once)
        masks, sets = {}, {}
        for joint in joints:
            if joint not in masks:
                support = set(model.supports[joint])
                masks[joint] = np.array([1.0 if j in support else 0.0 for j in arm_joint_ids])
                sets[joint] = len(sets)
        self._pair_info = [(i, j, masks[joints[i]], masks[joints[j]]) for i, j in pairs]
        # The distinct masks as rows, and each pair's two rows (velocity_scale's rates).
        self._move_sets = np.array(list(masks.values()))
        self._masks = list(self._move_sets)
        self._pair_sets = [(sets[joints[i]], sets[joints[j]]) for i, j in pairs]

    def with_tool(self, shapes):
        """This model with the tool's shapes and pairs (a ToolShapes prepared from the
        same armnav URDF by tool_shapes), as a new AvoidanceModel on the same Pinocchio
        model: no selection, cheap enough to run between two ticks. This one is left as
        it was. KeyError naming a joint the model lacks."""
        geom = pin.GeometryModel()
        for k, shape in enumerate(shapes.shapes):
            geom.addGeometryObject(shape_object(shape, self.model, k))
        new = copy.copy(self)
        new.geom = geom
        new.shape_links = list(shapes.shape_links)
        new.excluded = dict(shapes.excluded)
        new.candidates = [tuple(pair) for pair in shapes.pairs]
        new.allowance = np.array(shapes.allowance, dtype=float)
        new.allowances = dict(shapes.allowances)
        new._install(new.candidates)
        return new

    # --- helpers ------------------------------------------------------------------------
    def _actuated(self, seed, heads=5, arms=20):
        """Indices of the installed pairs whose distance the arm's joints change: with the
        head at each of `heads` seeded angles, some pair of `arms` seeded arm
        configurations gives distances more than 1 µm apart (GJK's noise is ~1e-9 m)."""
        model = self.model
        rng = np.random.default_rng(seed)
        lo, hi = model.lowerPositionLimit, model.upperPositionLimit
        arm = self._arm_idx
        moved = np.zeros(len(self.pairs), dtype=bool)
        q = pin.neutral(model)
        for _ in range(heads):
            if self._head_idx is not None:
                q[self._head_idx] = rng.uniform(lo[self._head_idx], hi[self._head_idx])
            ds = []
            for _ in range(arms):
                q[arm] = rng.uniform(lo[arm], hi[arm])
                ds.append(self._all_distances(q))
            ds = np.array(ds)
            moved |= ds.max(axis=0) - ds.min(axis=0) > 1e-6
        return np.flatnonzero(moved)

    def _all_distances(self, q):
        pin.computeDistances(self.model, self.data, self.geom, self.gdata, q)
        return np.array([r.min_distance for r in self._dres])

    def _set_q(self, q_arm, q_head):
        """The Pinocchio configuration, unchecked (the realtime path's input is the
        boards' reading)."""
        q = self._q
        q[self._arm_idx] = q_arm
        if self._head_idx is not None:
            q[self._head_idx] = q_head
        return q

    def _check(self, margins, widen, budget):
        """(GeometryData with these security margins, its results' isCollision, its
        distance results, its placements, its _Certificate), the wrappers of the C++
        objects kept: reading them costs a tenth of fetching them."""
        gd, wide = pin.GeometryData(self.geom), pin.GeometryData(self.geom)
        for k, margin in enumerate(margins):
            gd.collisionRequests[k].security_margin = margin
            wide.collisionRequests[k].security_margin = margin + widen
        return (gd, [r.isCollision for r in gd.collisionResults], list(gd.distanceResults),
                list(gd.oMg), _Certificate(wide, budget))

    def _reach(self):
        """m no point of any shape is farther from any joint's axis up its chain, in any
        configuration: the joints' and the shape's offsets along the chain and the shape's
        extent, summed (so a joint turning by dθ moves any point by at most this · |dθ|)."""
        model, reach = self.model, 0.0
        for g in self.geom.geometryObjects:
            shape = g.geometry
            shape.computeLocalAABB()
            r = (np.linalg.norm(g.placement.translation) + np.linalg.norm(shape.aabb_center)
                 + shape.aabb_radius)
            j = g.parentJoint
            while j > 0:
                r += np.linalg.norm(model.jointPlacements[j].translation)
                j = model.parents[j]
            reach = max(reach, float(r))
        return reach

    def _flagged(self, q, check):
        """The pairs `check` flags at q (its GeometryData's results set for them, the
        others' left as they were). Its certificate's wider check, run at a pose, leaves out
        pairs that no pose within the certificate's budget of it (the sum of |Δq|) can bring
        into this check — no two shapes close the widening over that motion — so until the
        arm moves that far only the pairs it flagged are checked (none: no check at all)."""
        gd, cert = check[0], check[4]
        model, data, geom = self.model, self.data, self.geom
        ref = cert.ref
        if ref is not None and joint_travel(q, ref) < cert.budget:
            cert.used = True
            if not cert.near:
                return []
            pin.updateGeometryPlacements(model, data, geom, gd, q)
        else:
            if ref is not None and not cert.used:
                # The arm outran the last one: the plain check for a while (a wider check
                # costs more than the plain one).
                cert.plain = PLAIN_CHECKS
            if cert.plain:
                cert.plain -= 1
                cert.ref = None
                if not pin.computeCollisions(model, data, geom, gd, q, False):
                    return []
                return [k for k, hit in enumerate(check[1]) if hit()]
            wide, cert.used = cert.gd, False
            cert.near = [k for k, hit in enumerate(cert.hits) if hit()] \
                if pin.computeCollisions(model, data, geom, wide, q, False) else []
            cert.ref = q.copy()
            if not cert.near:
                return []
            pin.updateGeometryPlacements(model, data, geom, gd)   # (the kinematics at q are done)
        collides = pin.computeCollision
        return [k for k in cert.near if collides(geom, gd, k)]

    def _scan(self, q, check):
        """[(clearance, pair index)] of the pairs `check` flags at the configuration q
        (beyond their allowance: self._push; within the zone: self._zone), their distances
        computed, and the joint Jacobians at q ready for _contacts. [] when none."""
        gd, dres = check[0], check[2]
        found = self._flagged(q, check)
        if not found:
            return []
        pin.computeJointJacobians(self.model, self.data, q)     # WORLD convention
        self._jac = self.data.J[:, self._arm_v]
        allowance, geom, distance = self._allowance, self.geom, pin.computeDistance
        for i, k in enumerate(found):
            distance(geom, gd, k)
            found[i] = (dres[k].min_distance + allowance[k], k)
        return found

    def _witness(self, check, k):
        """(normal, p_a, p_b) of pair k after _scan (3-tuples/lists of floats), or None when
        its shapes give no direction (concentric)."""
        res = check[2][k]
        oMg = check[3]
        ia, ib = self._pair_info[k][:2]
        pa, pb = res.getNearestPoint1().tolist(), res.getNearestPoint2().tolist()
        normal = _separating_normal(res.min_distance, pa, pb, res.normal.tolist(),
                                    oMg[ia].translation.tolist(), oMg[ib].translation.tolist())
        return None if normal is None else (normal, pa, pb)

    def _contacts(self, q, check):
        """The Contacts of the pairs `check` flags at q, their gradients the rows of one
        m×7 array: (contacts, gradients, clearances (m))."""
        scanned = self._scan(q, check)
        if not scanned:
            return [], _NO_GRADIENTS, _NO_CLEARANCES
        found, witnesses, wrenches = [], [], []
        for clearance, k in scanned:
            witness = self._witness(check, k)
            if witness is not None:
                normal, pa, pb = witness
                found.append((clearance, k))
                witnesses.append(witness)
                wrenches += (_wrench(normal, pb), _wrench(normal, pa))
        if not found:
            return [], _NO_GRADIENTS, _NO_CLEARANCES
        # In WORLD convention column j moves a point p at v_j + ω_j × p, so its rate along
        # n is (n, p × n)·(v_j, ω_j); the masks keep the joints that move each shape. One
        # product for every pair's two witness points.
        rows = np.array(wrenches) @ self._jac
        dres, masks, pair_sets = check[2], self._masks, self._pair_sets
        gradients = np.empty((len(found), 7))
        contacts = []
        for i, ((clearance, k), (normal, pa, pb)) in enumerate(zip(found, witnesses)):
            set_a, set_b = pair_sets[k]
            gradient = gradients[i]
            np.multiply(rows[2 * i], masks[set_b], out=gradient)
            gradient -= rows[2 * i + 1] * masks[set_a]
            contacts.append(Contact(k, dres[k].min_distance, clearance, normal, gradient, pa, pb))
        return contacts, gradients, np.array([clearance for clearance, _ in found])

    @staticmethod
    def _checked7(values, what):
        try:
            values = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise ValueError('%s must be 7 finite numbers, got %r' % (what, values))
        if values.shape != (7,) or np.count_nonzero(~np.isfinite(values)):
            raise ValueError('%s must be 7 finite numbers, got %r' % (what, values))
        return values

    # --- queries ------------------------------------------------------------------------
    def clearances(self, q_arm, q_head=0.0):
        """Clearance of every watched pair (m, in `pairs` order): distance + allowance."""
        q = self._config(q_arm, q_head)
        return self._all_distances(q) + self.allowance

    def contacts(self, q_arm, q_head=0.0, near_zone=False):
        """The pairs overlapping beyond their allowance (clearance < 0), or with
        near_zone those within velocity_scale's zone (clearance < zone), as Contacts."""
        return self._contacts(self._config(q_arm, q_head), self._zone if near_zone else self._push)[0]

    def pushing(self, q_arm, q_head):
        """contacts(q_arm, q_head) for the 1 kHz path: inputs unchecked."""
        return self._contacts(self._set_q(q_arm, q_head), self._push)[0]

    def push_terms(self, q_arm, q_head):
        """pushing(q_arm, q_head) with what the avoidance law reads of them at once:
        (contacts, their gradients as the rows of one m×7 array, their clearances (m))."""
        return self._contacts(self._set_q(q_arm, q_head), self._push)

    def velocity_scale(self, q_arm, q_head, qd_ref):
        """How much of the reference velocity qd_ref (rad/s, right_j0..6) to keep, in
        [0, 1]: for each pair within the zone whose distance qd_ref closes
        (ḋ = gradient·qd_ref < 0), (clearance − padding)/(zone − padding) clipped to
        [0, 1]; the smallest of these, or 1 when qd_ref closes none (moving away from
        every near pair is never slowed). ValueError on malformed input."""
        q = self._config(q_arm, q_head)
        qd_ref = self._checked7(qd_ref, 'qd_ref')
        return self._velocity_scale(q, qd_ref)

    def _velocity_scale(self, q, qd_ref):
        # The scale grows with the clearance: the nearest closing pair sets it, so look at
        # the pairs nearest first and stop at the first that closes.
        found = self._scan(q, self._zone)
        if not found:
            return 1.0
        # The twist of each shape-moving joint set under qd_ref: the rate of pair k is then
        # (n, p_b × n)·V[b's set] − (n, p_a × n)·V[a's set], in Python floats.
        twists = ((self._jac * qd_ref) @ self._move_sets.T).T.tolist()
        span = self.zone - self.padding
        for clearance, k in sorted(found):
            witness = self._witness(self._zone, k)
            if witness is None:
                continue
            normal, pa, pb = witness
            set_a, set_b = self._pair_sets[k]
            rate = _dot6(_wrench(normal, pb), twists[set_b]) - _dot6(_wrench(normal, pa), twists[set_a])
            if rate < -CLOSING_RATE:
                return min(1.0, max(0.0, (clearance - self.padding) / span))
        return 1.0

    def nearest(self, q_arm, q_head, bounds):
        """(pair index, clearance) of the watched pair nearest to overlapping at (q_arm,
        q_head), the lowest index among equals, as clearances() would name it; `bounds`
        (per pair, m) are lower bounds on the clearances there, and those it looked at are
        set to theirs (less GJK_NOISE). It looks at pairs in the order of their bounds and
        stops at the first bound beyond the nearest found: only pairs that could be the
        nearest are looked at (the 1 kHz path: inputs unchecked)."""
        pin.updateGeometryPlacements(self.model, self.data, self.geom, self.gdata,
                                     self._set_q(q_arm, q_head))
        dres, allowance, geom, gdata = self._dres, self._allowance, self.geom, self.gdata
        best, best_k = math.inf, -1
        for k in np.argsort(bounds, kind='stable').tolist():
            if bounds[k] > best:
                break
            pin.computeDistance(geom, gdata, k)
            clearance = dres[k].min_distance + allowance[k]
            bounds[k] = clearance - GJK_NOISE
            if clearance < best or (clearance == best and k < best_k):
                best, best_k = clearance, k
        return best_k, best

    def objects(self, contacts):
        """Bit mask (int) of the shapes in `contacts`: bit i is shape_links[i]."""
        mask = 0
        for c in contacts:
            ia, ib = self._pair_info[c.pair][:2]
            mask |= (1 << ia) | (1 << ib)
        return mask


@dataclass(frozen=True)
class ToolShapes:
    """The armnav shapes with a tool's, and the pairs avoidance watches among them: plain,
    picklable data (it travels to the realtime core in cmds.SetTool), made off the realtime
    path by tool_shapes and installed by AvoidanceModel.with_tool.

    shapes: per shape, in shape order (bit i of `objects`), a model.tool.welded_shapes entry.
    pairs: the watched pairs (shape indices); allowance: m, one per pair.
    allowances, excluded: AvoidanceModel's, as ((link, link), value) tuples."""
    shapes: Tuple
    pairs: Tuple
    allowance: Tuple
    allowances: Tuple
    excluded: Tuple

    @property
    def shape_links(self):
        return [shape[0] for shape in self.shapes]


def tool_shapes(armnav_xml, fragment_xml, **kwargs):
    """The ToolShapes of the armnav model carrying the fragments (model.tool.graft, their
    shapes grown as the armnav ones are): AvoidanceModel's full pair selection and
    allowances on the grafted URDF (`kwargs`: its options), each shape then welded, as
    model.tool welds the tool's inertias, onto the nearest joint of the boot armnav model
    (fingers where they rest, q = 0). Heavy (a fraction of a second): call it off the
    realtime path. ValueError (CollisionModelError) when the grafted shapes cannot be built."""
    grafted = AvoidanceModel(graft(armnav_xml, fragment_xml, ARMNAV_MARGIN), **kwargs)
    boot = pinocchio_models(safe_urdf(armnav_xml, 'armnav URDF')).full
    shapes = welded_shapes(boot, grafted.model, grafted.geom, grafted.shape_links)
    return ToolShapes(shapes=shapes, pairs=tuple(tuple(p) for p in grafted.candidates),
                      allowance=tuple(float(a) for a in grafted.allowance),
                      allowances=tuple(grafted.allowances.items()),
                      excluded=tuple(grafted.excluded.items()))


def objects_from_mask(mask, links):
    """The link names of the shapes whose bits are set in `mask` (an int or the float the
    state vector carries), without repeats, in shape order: CollisionAvoidanceState's
    collision_object. `links`: shape_links(armnav URDF)."""
    mask = int(mask)
    names = []
    for i, link in enumerate(links):
        if mask >> i & 1 and link not in names:
            names.append(link)
    return names


def joint_travel(q, ref):
    """Σ|q − ref| (rad), in index order (as the compiled kernels' l1_distance sums it)."""
    total = None if kernels is None else kernels.l1_distance(q, ref)
    if total is not None:
        return total
    total = 0.0
    for a, b in zip(q.tolist(), ref.tolist()):
        total += abs(a - b)
    return total


def _dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


def _wrench(n, p):
    """(n, p × n): a unit force along n at p, about the origin (3-sequences of floats)."""
    nx, ny, nz = n
    px, py, pz = p
    return (nx, ny, nz, py * nz - pz * ny, pz * nx - px * nz, px * ny - py * nx)


def _separating_normal(distance, pa, pb, hpp_normal, ca, cb):
    """Unit vector (3-tuple) from shape a towards shape b along which their distance grows
    (see the module docstring), or None when there is none (coincident centres). Python
    floats: numpy's per-call cost dwarfs the arithmetic on 3-vectors."""
    dx, dy, dz = pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]
    length = math.sqrt(dx * dx + dy * dy + dz * dz)
    if length > _WITNESS_EPS and distance != 0.0:
        scale = 1.0 / length if distance > 0.0 else -1.0 / length
        n = (dx * scale, dy * scale, dz * scale)
    else:
        hx, hy, hz = hpp_normal
        norm = math.sqrt(hx * hx + hy * hy + hz * hz)
        if norm > 0.5:                                  # NaN (sphere–sphere) fails this
            n = (hx / norm, hy / norm, hz / norm)
        else:
            cx, cy, cz = cb[0] - ca[0], cb[1] - ca[1], cb[2] - ca[2]
            norm = math.sqrt(cx * cx + cy * cy + cz * cz)
            if norm < _WITNESS_EPS:
                return None
            n = (cx / norm, cy / norm, cz / norm)
    if n[0] * (cb[0] - ca[0]) + n[1] * (cb[1] - ca[1]) + n[2] * (cb[2] - ca[2]) < 0.0:
        n = (-n[0], -n[1], -n[2])
    return n

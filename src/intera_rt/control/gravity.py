"""Gravity compensation: the model's gravity torque added to every controller's, unless
suppress_gravity_compensation keeps arriving (then the arm sags under its own weight, against
whatever the active controller does)."""
from intera_rt.control.base import Additive


class GravityCompensation(Additive):
    name = 'gravity_compensation'
    interaction = False                  # SEAJointState reports it in gravity_model_effort
    state_fields = (('suppressed', 1),)

    def __init__(self, context):
        super().__init__(context)
        self._suppressed = False

    def update(self, state, controller, out):
        self._suppressed = state.suppressed('gravity')
        return None if self._suppressed else state.gravity()

    def report(self, put):
        put('suppressed', float(self._suppressed))

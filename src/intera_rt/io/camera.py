"""The robot's internal cameras as IO devices: the head camera (IDS/ienso, colour, auto
exposure and gain) and the hand camera (Cognex, mono, strobe light).

Signals (robot_contract.md §3.9; ranges from the SDK's Cameras class):
  camera_streaming  bool   whether the camera streams; only one camera streams at a time —
                           starting one while another streams is refused, naming it
  set_exposure      float  head: 0..100 or -1 (auto); hand: 0.01..100
  set_gain          int    head: 0..79 or -1 (auto); hand: 0..255
  set_strobe        bool   hand camera only
Every signal has status 'ready' (the SDK's set_exposure / set_gain require it after a
write); a refused write sets that signal's status to 'error' with the reason.

`brightness()` turns exposure, gain and strobe into the factor the rendered image is
multiplied by: 1 at auto or at exposure 50 / gain 0.
"""
from intera_rt.io.device import CommandError, Device, Signal, in_range

AUTO = -1

CAMERAS = {
    'head_camera': dict(
        camera_type='ienso_ethernet', color=True, frame='head_camera',
        width=640, height=400, hfov=2.00787026, near=0.1, rate=10.0,
        exposure=(0.0, 100.0), gain=(0, 79), auto=True, strobe=False,
        default_exposure=AUTO, default_gain=AUTO),
    'right_hand_camera': dict(
        camera_type='cognex', color=False, frame='right_hand_camera_optical',
        width=752, height=480, hfov=1.0992892, near=0.02, rate=10.0,
        exposure=(0.01, 100.0), gain=(0, 255), auto=False, strobe=True,
        default_exposure=50.0, default_gain=0),
}
STROBE_GAIN = 1.3


class InternalCamera(Device):
    """One internal camera. `spec` is a CAMERAS entry (with any overrides); `streaming_other`
    a callable(name) → the name of another camera that streams now, or None."""

    def __init__(self, name, spec, streaming_other=lambda name: None):
        self.spec = dict(spec)
        self._streaming_other = streaming_other
        lo, hi = spec['exposure']
        glo, ghi = spec['gain']
        auto = (AUTO,) if spec['auto'] else ()
        signals = [
            Signal('camera_streaming', 'bool', 'output', False, writable=True),
            Signal('set_exposure', 'float', 'output', float(spec['default_exposure']), writable=True,
                   check=self._auto_check('set_exposure', lo, hi, auto)),
            Signal('set_gain', 'int', 'output', int(spec['default_gain']), writable=True,
                   check=self._auto_check('set_gain', glo, ghi, auto)),
        ]
        if spec['strobe']:
            signals.append(Signal('set_strobe', 'bool', 'output', False, writable=True))
        super().__init__(name, 'internal_camera', signals, device_type='InternalCamera',
                         update_rate=spec['rate'],
                         params={'cameraType': spec['camera_type'], 'width': spec['width'],
                                 'height': spec['height'], 'frame_rate_hz': spec['rate'],
                                 'frame_id': spec['frame'], 'color': spec['color']})

    def _auto_check(self, name, lo, hi, auto):
        ranged = in_range(name, lo, hi, extra=auto)

        def check(value):
            if value == AUTO and not auto:
                raise ValueError('%s = -1 (auto): %s has no automatic %s' % (
                    name, self.name, name[4:]))
            return ranged(value)
        return check

    @property
    def streaming(self):
        return bool(self.signals['camera_streaming'].value)

    def validate(self, signal, value):
        if signal.name == 'camera_streaming' and value and not self.streaming:
            other = self._streaming_other(self.name)
            if other:
                raise CommandError('camera_streaming: %s is streaming; only one internal camera '
                                   'streams at a time: stop it first' % other)

    def brightness(self):
        """Factor of the image's brightness from exposure, gain and strobe."""
        e = self.signals['set_exposure'].value
        g = self.signals['set_gain'].value
        f = 1.0 if e == AUTO else 0.05 + 0.95 * e / 50.0
        if g != AUTO:
            f *= 1.0 + 3.0 * g / self.spec['gain'][1]
        if 'set_strobe' in self.signals and self.signals['set_strobe'].value:
            f *= STROBE_GAIN
        return f

"""HeadDisplayIO, in the io node: the head's screen (intera_rt.io.head_display).

  sub  /robot/head_display      sensor_msgs/Image (the SDK's HeadDisplay: latched, bgr8,
                                up to 1024×600, top-left aligned)
  pub  /intera_rt/head_display  sensor_msgs/Image, latched: the whole screen as it shows
                                now, 1024×600 bgr8 (black at boot), for a viewer
                                (`rqt_image_view /intera_rt/head_display`)
The internal cameras see it too: it is drawn on the head's screen in their images
(render.py, `screen` link). An image the screen cannot show (too large, an unknown
encoding, data not matching its size) is refused with an error line naming the field; the
screen keeps what it showed.

Private parameter ~head_display_img: an image file shown from start (sawyer_simulator's
head_display_img argument); one that cannot be shown is an error line naming it, the
screen black.
"""
import threading

import rospy
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from intera_rt.io.head_display import (SCREEN_HEIGHT, SCREEN_WIDTH, blank_screen, screen_from_file,
                                       screen_image, screen_linear_rgb)

VIEW_TOPIC = '/intera_rt/head_display'
SCREEN_LINK = 'screen'


class HeadDisplayIO:
    def __init__(self):
        self._lock = threading.Lock()
        self._screen = blank_screen()
        path = rospy.get_param('~head_display_img', '')
        if path:
            try:
                self._screen = screen_from_file(path)
                rospy.loginfo('head_display: showing ~head_display_img %r', path)
            except ValueError as exc:
                rospy.logerr('head_display: ~head_display_img %s; the screen stays black', exc)
        self._linear = None            # the screen as linear rgb, made when a camera asks
        self.version = 0               # bumped on every image shown
        self._pub = rospy.Publisher(VIEW_TOPIC, Image, queue_size=1, latch=True)
        self._publish(rospy.Time.now())
        rospy.Subscriber('/robot/head_display', Image, self._on_image, queue_size=2)

    def _on_image(self, msg):
        try:
            screen = screen_image(msg.width, msg.height, msg.encoding, msg.step, msg.data)
        except ValueError as exc:
            rospy.logerr('head_display: image refused: %s; the screen keeps what it showed', exc)
            return
        with self._lock:
            self._screen, self._linear = screen, None
            self.version += 1
        rospy.loginfo('head_display: showing a %d×%d %s image', msg.width, msg.height, msg.encoding)
        self._publish(msg.header.stamp if not msg.header.stamp.is_zero() else rospy.Time.now())

    def _publish(self, stamp):
        with self._lock:
            data = self._screen.tobytes()
        self._pub.publish(Image(header=Header(stamp=stamp, frame_id=SCREEN_LINK),
                                height=SCREEN_HEIGHT, width=SCREEN_WIDTH, encoding='bgr8',
                                is_bigendian=0, step=3 * SCREEN_WIDTH, data=data))

    def screens(self):
        """(version, {link: linear rgb image}) for the renderer."""
        with self._lock:
            if self._linear is None:
                self._linear = screen_linear_rgb(self._screen)
            return self.version, {SCREEN_LINK: self._linear}

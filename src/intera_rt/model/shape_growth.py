"""Growing a URDF's collision primitives by a margin on every face: sphere and cylinder
radius + margin, cylinder length + 2·margin, box sizes + 2·margin. The armnav shapes are the
tight ones grown by 5 cm (tools/make_armnav_urdf.py), high-speed scaling's the armnav ones
grown again (model.high_speed). Standard library only: the tool loads this file by its path.
"""

ARMNAV_MARGIN = 0.05           # m: the armnav shapes are the tight ones grown by this


def grow_geometry(geometry, margin, fmt=repr, where='a link'):
    """Grow the primitives of one <geometry> element (xml.etree) in place by `margin` (m);
    `fmt` writes a number as attribute text. ValueError for a shape that cannot be grown
    (a mesh), naming `where`."""
    for shape in geometry:
        if shape.tag == 'sphere':
            shape.set('radius', fmt(float(shape.get('radius')) + margin))
        elif shape.tag == 'cylinder':
            shape.set('radius', fmt(float(shape.get('radius')) + margin))
            shape.set('length', fmt(float(shape.get('length')) + 2.0 * margin))
        elif shape.tag == 'box':
            shape.set('size', ' '.join(fmt(float(v) + 2.0 * margin)
                                       for v in shape.get('size').split()))
        else:
            raise ValueError('unsupported collision geometry <%s> in %s' % (shape.tag, where))

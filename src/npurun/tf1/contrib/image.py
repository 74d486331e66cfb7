"""`tf.contrib.image`'s geometric ops (`transform`, `rotate`, `translate`, `angles_to_projective_transforms`,
`translations_to_projective_transforms`, `compose_transforms`) on TensorFlow 2.21's own
`ImageProjectiveTransformV3` kernel, with TF 1's conventions: a transform `[a0, a1, a2, b0, b1, b2, c0, c1]`
maps an output point (x, y) to the input point ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k),
k = c0 x + c1 y + 1; points outside the image are 0; images are HWC or NHWC.
"""
from __future__ import annotations



def _batched(images):
    import tensorflow as tf

    images = tf.convert_to_tensor(images)
    if images.shape.rank == 3:
        return images[None], True
    if images.shape.rank == 4:
        return images, False
    raise ValueError(f"tf.contrib.image: images must be HWC or NHWC; got rank {images.shape.rank}")


def transform(images, transforms, interpolation="NEAREST", output_shape=None, name=None):
    import tensorflow as tf

    with tf.name_scope(name or "transform"):
        batch, single = _batched(images)
        transforms = tf.convert_to_tensor(transforms, tf.float32)
        if transforms.shape.rank == 1:
            transforms = transforms[None]
        output_shape = tf.shape(batch)[1:3] if output_shape is None else tf.convert_to_tensor(output_shape, tf.int32)
        out = tf.raw_ops.ImageProjectiveTransformV3(
            images=batch, transforms=transforms, output_shape=output_shape, fill_value=tf.constant(0.0),
            interpolation=interpolation.upper(), fill_mode="CONSTANT")
        return out[0] if single else out


def angles_to_projective_transforms(angles, image_height, image_width, name=None):
    """The transforms rotating images counterclockwise by `angles` (radians) about their centres."""
    import tensorflow as tf

    with tf.name_scope(name or "angles_to_projective_transforms"):
        angles = tf.convert_to_tensor(angles, tf.float32)
        if angles.shape.rank == 0:
            angles = angles[None]
        h, w = tf.cast(image_height, tf.float32) - 1, tf.cast(image_width, tf.float32) - 1
        cos, sin = tf.cos(angles), tf.sin(angles)
        x_offset = (w - (cos * w - sin * h)) / 2.0
        y_offset = (h - (sin * w + cos * h)) / 2.0
        zeros = tf.zeros_like(angles)
        return tf.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1)


def rotate(images, angles, interpolation="NEAREST", name=None):
    import tensorflow as tf

    with tf.name_scope(name or "rotate"):
        batch, single = _batched(images)
        shape = tf.shape(batch)
        out = transform(batch, angles_to_projective_transforms(angles, shape[1], shape[2]), interpolation)
        return out[0] if single else out


def translations_to_projective_transforms(translations, name=None):
    import tensorflow as tf

    with tf.name_scope(name or "translations_to_projective_transforms"):
        translations = tf.convert_to_tensor(translations, tf.float32)
        if translations.shape.rank == 1:
            translations = translations[None]
        dx, dy = translations[:, 0], translations[:, 1]
        ones, zeros = tf.ones_like(dx), tf.zeros_like(dx)
        return tf.stack([ones, zeros, -dx, zeros, ones, -dy, zeros, zeros], axis=1)


def translate(images, translations, interpolation="NEAREST", name=None):
    """Shift images by `translations` [dx, dy] pixels (per image, or one for all)."""
    return transform(images, translations_to_projective_transforms(translations), interpolation, name=name)


def compose_transforms(*transforms):
    """The transform applying the last of `transforms` first (as TF 1 composed them)."""
    import tensorflow as tf

    def to_matrix(t):
        t = tf.convert_to_tensor(t, tf.float32)
        return tf.reshape(tf.concat([t, tf.ones([tf.shape(t)[0], 1])], axis=1), [-1, 3, 3])

    composed = to_matrix(transforms[0])
    for t in transforms[1:]:
        composed = tf.matmul(composed, to_matrix(t))
    flat = tf.reshape(composed, [-1, 9])
    return flat[:, :8] / flat[:, 8:9]




# ---- contrib.image.python.ops.distort_image_ops: hue/saturation/value changes in YIQ space ----------
_RGB_TO_YIQ = ((0.299, 0.587, 0.114), (0.596, -0.274, -0.322), (0.211, -0.523, 0.312))


def adjust_hsv_in_yiq(image, delta_hue=0, scale_saturation=1, scale_value=1, name=None):
    """Rotate the hue (radians), scale the saturation and the value of RGB images (last axis 3), as
    TensorFlow 1's kernel did: one 3x3 colour transform in YIQ space (I/Q rotated by delta_hue and
    scaled by scale_saturation, everything by scale_value)."""
    import numpy as np
    import tensorflow as tf

    with tf.name_scope(name or "adjust_hsv_in_yiq"):
        image = tf.convert_to_tensor(image)
        original = image.dtype
        pixels = tf.cast(image, tf.float32)
        to_yiq = tf.constant(_RGB_TO_YIQ, tf.float32)
        to_rgb = tf.constant(np.linalg.inv(np.array(_RGB_TO_YIQ)), tf.float32)
        hue, sat, val = (tf.cast(v, tf.float32) for v in (delta_hue, scale_saturation, scale_value))
        cos, sin = val * sat * tf.cos(hue), val * sat * tf.sin(hue)
        zero = tf.zeros_like(cos)
        in_yiq = tf.stack([tf.stack([val, zero, zero]), tf.stack([zero, cos, -sin]), tf.stack([zero, sin, cos])])
        # The rotation's direction was not checked against TF 1's kernel (random_hsv_in_yiq draws a symmetric
        # delta, so it does not matter there); identity, grey and value scaling are tested.
        colour = tf.matmul(to_rgb, tf.matmul(in_yiq, to_yiq))  # rgb' = colour @ rgb
        out = tf.tensordot(pixels, tf.transpose(colour), axes=[[-1], [0]])
        return tf.cast(out, original) if original.is_floating else tf.saturate_cast(tf.round(out), original)


def random_hsv_in_yiq(image, max_delta_hue=0, lower_saturation=1, upper_saturation=1, lower_value=1,
                      upper_value=1, seed=None):
    """adjust_hsv_in_yiq with a hue delta drawn from [-max_delta_hue, max_delta_hue] and scales drawn
    from [lower, upper] (one draw per call, as TensorFlow 1 did)."""
    import tensorflow as tf

    if max_delta_hue < 0 or lower_saturation < 0 or lower_value < 0 or lower_saturation > upper_saturation \
            or lower_value > upper_value:
        raise ValueError("random_hsv_in_yiq: need max_delta_hue >= 0 and 0 <= lower <= upper for saturation and value")
    hue = tf.random.uniform([], -max_delta_hue, max_delta_hue, seed=seed) if max_delta_hue else 0.0
    sat = tf.random.uniform([], lower_saturation, upper_saturation, seed=seed)
    val = tf.random.uniform([], lower_value, upper_value, seed=seed)
    return adjust_hsv_in_yiq(image, hue, sat, val)

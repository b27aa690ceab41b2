"""What goes into a provider's request and comes out of its answer: image payloads, usage,
and the fields of an answer whether the SDK parsed it into its models or it came as JSON."""

from __future__ import annotations

from typing import Any

from mmjudge.records import EncodedImage, JudgeRequest


def image_marker(image: EncodedImage) -> str:
    """What stands in for an image's bytes in logged requests."""
    return f"sha256:{image.sha256}"


def image_data_url(image: EncodedImage) -> str:
    """A ``data:`` URL for an encoded image, or the image's URL when it is passed through."""
    if image.encoding == "url" or image.data.startswith("data:"):
        return image.data
    return f"data:{image.media_type};base64,{image.data}"


def image_base64(image: EncodedImage) -> tuple[str, str]:
    """``(media_type, bare base64)``; a data URL's prefix is stripped (its type wins)."""
    if image.data.startswith("data:"):
        header, _, payload = image.data.partition(",")
        media_type = header[len("data:") :].split(";", 1)[0] or image.media_type
        return media_type, payload
    return image.media_type, image.data


def placed_images(request: JudgeRequest) -> list[str | EncodedImage]:
    """The prompt text and the images of a request that places them
    (:attr:`~mmjudge.records.JudgeRequest.image_places`), in the order the model reads them:
    each image after the text before its place; no empty text between two images."""
    parts: list[str | EncodedImage] = []
    start = 0
    for image, place in zip(request.images, request.image_places, strict=True):
        if place > start:
            parts.append(request.prompt[start:place])
            start = place
        parts.append(image)
    if start < len(request.prompt):
        parts.append(request.prompt[start:])
    return parts


def usage_dict(usage: Any) -> dict[str, Any]:
    """An SDK usage object as the dict the server sent (unset fields left out)."""
    if usage is None:
        return {}
    if isinstance(usage, dict):
        return dict(usage)
    dump = getattr(usage, "model_dump", None)
    if dump is None:
        return {}
    data = dump(exclude_unset=True)
    return data if isinstance(data, dict) else {}


def count(data: Any, *path: str) -> int:
    """An integer found at ``path`` in nested dicts; 0 when absent, null or not a number."""
    value = data
    for key in path:
        if not isinstance(value, dict):
            return 0
        value = value.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return int(value)


def field_value(value: Any, name: str) -> Any:
    """``value.name`` of an SDK model, or ``value[name]`` of the JSON it is built from (what
    :class:`~mmjudge.speed.wire.WireSender` returns)."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)

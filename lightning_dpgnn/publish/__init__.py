"""Publishing a private model: the hub folder format (:mod:`.hub`: write, verify, the
publishing gate, push and pull) and the model card (:mod:`.card`).

It sits below ``methods/``: ``methods/`` imports it (``save_pretrained``, ``push_to_hub``,
``from_pretrained``, ``generate_model_card``), and it never imports ``methods/``, ``zoo/`` or
``callbacks/`` (a model is read through :class:`~.hub.PublishableModel`). ``zoo/`` (recipes,
registry, ``dpgnn zoo``) builds on it.
"""

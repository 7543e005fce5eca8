"""Publishing a private model: the hub folder format and the publishing gate (:mod:`.hub`) and
the model card (:mod:`.card`). It never imports ``methods/``, ``zoo/`` or ``callbacks/``."""

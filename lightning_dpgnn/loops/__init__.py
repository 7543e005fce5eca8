from .staged import Stage, StagedFit

__all__ = ["Stage", "StagedFit"]

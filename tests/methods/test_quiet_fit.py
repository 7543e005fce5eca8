"""Quiet by default in Python, as on the command line: a fit of one method per family emits no
warning the library causes (Lightning's one-batch-epoch and deprecation warnings, Opacus' hook
warning at node level), with every filter (pytest's included) switched off; the user's own
warnings still pass."""

import warnings

import lightning as L
import pytest

from lightning_dpgnn import GAP, LPGNN, PoinDP, ProGAP

pytestmark = pytest.mark.quick  # a fit per family: the check of an install (pytest -m quick)

FAMILIES = {
    "GAP edge (staged, full batch)": lambda: GAP(epsilon=1.0, encoder_epochs=1,
                                                 classifier_epochs=1),
    "ProGAP node (DP-SGD, Opacus)": lambda: ProGAP(privacy="node", epsilon=8.0, max_degree=21,
                                                   depth=1, epochs_per_stage=1, batch_size=500),
    "PoinDP edge (hyperbolic)": lambda: PoinDP(epsilon=1.0, encoder_epochs=1,
                                               classifier_epochs=1),
    "LPGNN (local DP)": lambda: LPGNN(x_epsilon=1.0, y_epsilon=1.0),
}


class Shout(L.Callback):
    """The user's own warning, during the fit: it must come through."""

    def on_train_epoch_end(self, trainer, pl_module):
        warnings.warn("the user's own warning", UserWarning, stacklevel=1)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_fit_in_python_emits_no_warning_the_library_causes(family, csbm_dm, ldp_dm, tmp_path):
    trainer = L.Trainer(max_epochs=2, default_root_dir=tmp_path, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[Shout()])
    model = FAMILIES[family]()
    dm = ldp_dm if family.startswith("LPGNN") else csbm_dm  # features in LDP's [0, 1] range
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(model, dm)
        trainer.test(model, dm, verbose=False)
    messages = [str(w.message) for w in caught]
    assert [m for m in messages if m != "the user's own warning"] == []
    assert "the user's own warning" in messages
    # and the filters are gone once the fit is over
    with pytest.warns(UserWarning, match="Full backward hook is firing"):
        warnings.warn("Full backward hook is firing", UserWarning, stacklevel=1)

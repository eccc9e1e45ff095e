"""EAGLE-3 hooks for Kimi-K2.5 in SGLang: the payload of manifests/kimi-k25-eagle3.toml.

SGLang's EAGLE-3 path talks to the *target* model object directly:

* ``ModelRunner`` calls ``model.set_eagle3_layers_to_capture(layer_ids)`` so the
  target keeps the auxiliary hidden states the draft head is trained on;
* ``EAGLEWorker.__init__`` calls ``model.get_embed_and_head()`` to share the
  target's embedding and LM head with the draft model, and the draft side may
  call ``set_embed_and_head(embed, head)``.

``KimiK25ForConditionalGeneration`` wraps a ``DeepseekV3ForCausalLM`` as
``self.language_model``, which has all three methods, but the wrapper did not
forward them until upstream PR #19689 (2026-03-03).  The methods below forward
them.  When the text model is absent (``language_model`` unset or ``None``, as
in an encoder-only deployment) or does not implement the method, they raise an
``AttributeError`` that names the class, the method and what is missing: a
speculative-decoding setup must never silently run without its hooks.

``torch.Tensor`` appears only in string annotations, so the methods need
nothing from the target module beyond the ``typing`` names the manifest
ensures.

Only the methods of the class below are added (by ``add-methods``); the class
itself is a stand-in that names the target.  The imports mirror the
``ensure-import`` patches of the manifest: the target module imports all of
them already, except ``List`` at some upstream commits.
"""

from typing import TYPE_CHECKING, List, Optional, Tuple

if TYPE_CHECKING:  # for type checkers of this file; the hooks need no torch at run time
    import torch


class KimiK25ForConditionalGeneration:
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None) -> None:
        """Ask the text model to keep the hidden states EAGLE-3 drafts from.

        ``layer_ids`` are the draft config's ``eagle_aux_hidden_state_layer_ids``;
        ``None`` lets the text model pick its default layers.
        """
        language_model = getattr(self, "language_model", None)
        if language_model is None:
            raise AttributeError(
                f"{type(self).__name__}.set_eagle3_layers_to_capture: self.language_model is missing or None, "
                "so there is no text model to capture EAGLE-3 hidden states from"
            )
        forward = getattr(language_model, "set_eagle3_layers_to_capture", None)
        if not callable(forward):
            raise AttributeError(
                f"{type(self).__name__}.set_eagle3_layers_to_capture: the language model "
                f"({type(language_model).__name__}) has no set_eagle3_layers_to_capture method, "
                "so EAGLE-3 cannot capture its hidden states"
            )
        forward(layer_ids)

    def get_embed_and_head(self) -> Tuple["torch.Tensor", "torch.Tensor"]:
        """The text model's input embedding and LM head weights, shared with the draft model."""
        language_model = getattr(self, "language_model", None)
        if language_model is None:
            raise AttributeError(
                f"{type(self).__name__}.get_embed_and_head: self.language_model is missing or None, "
                "so there is no embedding or LM head to share with the draft model"
            )
        forward = getattr(language_model, "get_embed_and_head", None)
        if not callable(forward):
            raise AttributeError(
                f"{type(self).__name__}.get_embed_and_head: the language model "
                f"({type(language_model).__name__}) has no get_embed_and_head method"
            )
        return forward()

    def set_embed_and_head(self, embed: "torch.Tensor", head: "torch.Tensor") -> None:
        """Replace the text model's input embedding and LM head weights."""
        language_model = getattr(self, "language_model", None)
        if language_model is None:
            raise AttributeError(
                f"{type(self).__name__}.set_embed_and_head: self.language_model is missing or None, "
                "so there is no embedding or LM head to replace"
            )
        forward = getattr(language_model, "set_embed_and_head", None)
        if not callable(forward):
            raise AttributeError(
                f"{type(self).__name__}.set_embed_and_head: the language model "
                f"({type(language_model).__name__}) has no set_embed_and_head method"
            )
        forward(embed, head)

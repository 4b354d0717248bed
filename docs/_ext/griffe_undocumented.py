"""A griffe extension for the API reference: leave out attributes that have no docstring.

Layers and optimizers set many plain attributes in `__init__` (`self.beta1 = beta1`); listed without a word each,
they bury the constructor's documented parameters. Properties and documented attributes stay.
"""
import griffe


class DropUndocumentedAttributes(griffe.Extension):
    def _drop(self, obj):
        for name, member in list(obj.members.items()):
            if member.is_alias or not member.is_attribute:
                continue
            if "property" not in member.labels and not member.docstring:
                del obj.members[name]

    def on_class_members(self, *, cls, **kwargs):
        self._drop(cls)

    def on_module_members(self, *, mod, **kwargs):
        self._drop(mod)

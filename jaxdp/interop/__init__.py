"""Bridges to other privacy libraries; each submodule imports its library lazily (on its own import).

* :mod:`jaxdp.interop.dp_accounting` -- Google's ``dp_accounting``: :func:`from_dp_accounting`
  converts ``DpEvent`` trees to :mod:`jaxdp.events`; :class:`JaxdpAccountant` is a
  ``dp_accounting.PrivacyAccountant`` backed by :func:`jaxdp.account`
  (``pip install jaxdp[dp_accounting]``).
* :mod:`jaxdp.interop.jax_privacy` -- :class:`JaxdpAccountantConfig`, a jax_privacy
  ``DpAccountantConfig`` creating :class:`JaxdpAccountant` (``pip install jaxdp[jax_privacy]``).
* :mod:`jaxdp.interop.opacus` -- Opacus 1.6: ``JaxdpOpacusAccountant``, an ``IAccountant``, and
  ``register()``, which makes ``PrivacyEngine(accountant="jaxdp")`` use it (``pip install jaxdp[opacus]``).

``import jaxdp`` and ``import jaxdp.interop`` never import a third-party library.
"""

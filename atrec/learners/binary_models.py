"""The models of the binary reference code, stacked over replicas: matrix factorisation without
biases, the NCF propensity model, and their initialisation (docs/protocols.md, "binary-icde24").

- MF: ``logit = <W_u, H_i>``, probability ``sigmoid(logit)``; PyTorch's ``nn.Embedding``
  default makes every entry N(0, 1), not scaled by ``k``;
- NCF propensity: ``sigmoid(a . [W_u ; H_i] + b)``, a logistic model on the concatenated
  embeddings, ``(a, b)`` with ``nn.Linear``'s default init, uniform in ``+-1/sqrt(2k)``.

Each replica draws from its own generator, keyed by its seed and a salt per model, so a seed's
models do not depend on which seeds share its call. Parameters are dicts of float32 arrays
``[R, ...]``; a model's names carry a prefix (``pred_``, ``imp_``, ``prop_``) so several live in
one dict.
"""

from __future__ import annotations

import numpy as np

from atrec.runtime import tf

SALTS = {"pred": 11, "imp": 23, "prop": 37, "extra": 41, "bias": 53, "tprop": 59}


def _rng(seed: int, salt: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64([int(seed), salt]))


def normal_tables(seeds, prefix: str, num_users: int, num_items: int, dim: int,
                  salt: int | None = None) -> dict:
    """``{prefix_W: [R, nu, k], prefix_H: [R, ni, k]}``, every entry N(0, 1)."""
    salt = SALTS.get(prefix, 0) if salt is None else salt
    users, items = [], []
    for s in seeds:
        g = _rng(s, salt)
        users.append(g.standard_normal((num_users, dim), dtype=np.float32))
        items.append(g.standard_normal((num_items, dim), dtype=np.float32))
    return {f"{prefix}_W": np.stack(users), f"{prefix}_H": np.stack(items)}


def linear(seeds, prefix: str, fan_in: int, fan_out: int = 1, salt: int | None = None) -> dict:
    """``{prefix_a: [R, fan_in(, fan_out)], prefix_b: [R(, fan_out)]}`` uniform in
    ``+-1/sqrt(fan_in)`` (``nn.Linear``'s default); ``fan_out == 1`` drops that axis."""
    salt = SALTS.get(prefix, 0) + 1000 if salt is None else salt
    bound = 1.0 / np.sqrt(fan_in)
    a, b = [], []
    for s in seeds:
        g = _rng(s, salt)
        a.append(g.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        b.append(g.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    a, b = np.stack(a), np.stack(b)
    if fan_out == 1:
        return {f"{prefix}_a": a[..., 0], f"{prefix}_b": b[..., 0]}
    return {f"{prefix}_a": a, f"{prefix}_b": b}


def ncf_params(seeds, num_users: int, num_items: int, dim: int) -> dict:
    """The NCF propensity model's embeddings and linear layer, prefix ``prop``."""
    return {**normal_tables(seeds, "prop", num_users, num_items, dim),
            **linear(seeds, "prop", 2 * dim)}


def rows(table, index):
    """``table[r, index[r]]`` per replica: ``[R, n, k]`` for index ``[R, n]``."""
    return tf.gather(table, index, batch_dims=1)


def mf_logit(params: dict, prefix: str, users, items):
    """``<W_u, H_i>`` of the MF called ``prefix``, ``[R, n]``."""
    return tf.reduce_sum(rows(params[f"{prefix}_W"], users) * rows(params[f"{prefix}_H"], items),
                         axis=-1)


def mf_prob(params: dict, prefix: str, users, items):
    return tf.sigmoid(mf_logit(params, prefix, users, items))


def ncf_logit(params: dict, users, items, prefix: str = "prop"):
    """``a . [W_u ; H_i] + b``, ``[R, n]``.

    Each table is multiplied by its half of ``a`` first (``W a_user``, ``H a_item``: one
    scalar per user and per item) and the pairs gather those scalars. The gradient then
    scatters one scalar per pair instead of a row of ``k``, and the tables' gradients are
    outer products: a propensity step over all pairs at Yahoo's size is about twice as fast
    as gathering the rows (docs/performance.md). The sums are the same, in another order."""
    a = params[f"{prefix}_a"]
    k = params[f"{prefix}_W"].shape[-1]
    by_user = tf.linalg.matvec(params[f"{prefix}_W"], a[:, :k])
    by_item = tf.linalg.matvec(params[f"{prefix}_H"], a[:, k:])
    return (tf.gather(by_user, users, batch_dims=1) + tf.gather(by_item, items, batch_dims=1)
            + params[f"{prefix}_b"][:, None])


def ncf_logit_rows(params: dict, users, items, prefix: str):
    """:func:`ncf_logit` by gathering each pair's rows ``[W_u ; H_i]`` and one product with
    ``a``: for tables that do not train (TDR's logistic propensity on a frozen MF). Nothing
    is then scattered into the tables, and the gradient is ``a``'s and ``b``'s alone, so a
    step costs ``B 2k`` rather than the two whole-table products: that stage's compiled epoch
    runs 2.5 times faster at Yahoo's size (docs/performance.md). The same sums, in another
    order."""
    features = tf.concat([rows(params[f"{prefix}_W"], users), rows(params[f"{prefix}_H"], items)],
                         -1)
    return (tf.einsum("rbk,rk->rb", features, params[f"{prefix}_a"])
            + params[f"{prefix}_b"][:, None])


def ncf_prob(params: dict, users, items, prefix: str = "prop"):
    return tf.sigmoid(ncf_logit(params, users, items, prefix))

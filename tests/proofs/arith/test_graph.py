"""The traced-rule graph: hash-consing, exact constants of any size, the wire form and its checks."""

from fractions import Fraction

import pytest

from specproof.proofs.arith.graph import Graph, GraphBuilder, GraphError, exact_constant
from specproof.proofs import ExactArith


def test_the_same_operation_on_the_same_nodes_is_one_node():
    b = GraphBuilder()
    p, q = b.input("p"), b.input("q")
    x = b.apply("add", (p, q))
    assert b.apply("add", (p, q)) == x and b.const(Fraction(2, 2)) == b.const(1)
    deep = p
    for _ in range(200):  # min(1, .) nested: each level is one node, and equal subterms are shared
        deep = b.apply("minimum", (b.const(1), deep))
    assert len(b.nodes) == 4 + 200  # p, q, p + q, 1, then one node per level


def test_constants_are_plain_and_exact_at_any_size():
    class Liar(Fraction):
        def __lt__(self, other):
            return True

    plain = exact_constant(Liar(3, 6))
    assert type(plain) is Fraction and plain == Fraction(1, 2)
    class Seven(int):
        def __eq__(self, other):
            return True

    assert type(exact_constant(Seven(7))) is int and exact_constant(Seven(7)) == 7
    with pytest.raises(TypeError):
        exact_constant(True)
    with pytest.raises(TypeError):
        exact_constant(0.5)
    b = GraphBuilder()
    huge = Fraction(10**6000 + 1, 3)
    root = b.apply("mul", (b.input("p"), b.const(huge)))
    graph = Graph.from_data(b.graph({"acceptance": root}).as_data())
    assert graph.function("acceptance")(ExactArith(), (Fraction(1, 2),), (Fraction(1),)) == (huge / 2,)


@pytest.mark.parametrize("data, message", [
    ({"nodes": [["input", "p"], ["add", 0, 5]], "roots": {}}, "earlier nodes"),
    ({"nodes": [["input", "p"], ["input", "p"]], "roots": {}}, "hash-consed"),
    ({"nodes": [["const", "12", "0x1"]], "roots": {}}, "hexadecimal"),
    ({"nodes": [["const", "0x1", "0x0"]], "roots": {}}, "not positive"),
    ({"nodes": [["input", "p"], ["exec", 0]], "roots": {}}, "not a known operation"),
    ({"nodes": [["input", "p"], ["log", 0], ["add", 1, 0]], "roots": {}}, "two numbers or two logarithms"),
    ({"nodes": [["input", "u"]], "roots": {"acceptance": 0}}, "reads inputs"),
    ({"nodes": [["input", "p"]], "roots": {"prove": 0}}, "not a function"),
    ([], "a graph is"),
])
def test_the_wire_form_is_checked(data, message):
    with pytest.raises(GraphError, match=message):
        Graph.from_data(data)


def test_show_prints_every_reachable_node_and_the_roots():
    b = GraphBuilder()
    p, q = b.input("p"), b.input("q")
    b.apply("sub", (q, p))  # not reachable from the root: not shown
    root = b.apply("minimum", (b.const(1), b.apply("safe_div", (p, q, b.const(0)))))
    text = b.graph({"acceptance": root}).show()
    assert "safe_div(%0, %1, %4)" in text and "sub" not in text and text.endswith(f"acceptance = %{root}")

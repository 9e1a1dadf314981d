#!/usr/bin/env python3
"""Draws each crate's import graph and counts its circles, for the
architecture's layering rule (ARCHITECTURE.md, "Crate layers").

A node is a top-level module of a crate's `src/` (a file or a folder);
an arrow runs from module `a` to module `b` when a file of `a` names
`crate::b` (or, from a top-level file, `super::b`), or names an item the
crate root re-exports from `b`. Comments are ignored; tests count. A
circle is a strongly connected component of more than one module; the
arrows pointing back up a crate's layers are estimated with Eades,
Lin and Smyth's greedy ordering (a feedback arc set: remove them and no
circle is left).

    python3 scripts/import_graph.py [CRATE_DIR ...]   (default: every crate)
"""
import collections
import os
import re
import sys

def parse_reexports(lib, tops):
    m={}
    s=re.sub(r'//.*','',lib)
    for mm in re.finditer(r'pub(?:\([a-z]+\))?\s+use\s+(?:crate::|self::)?([a-z_][a-z0-9_]*)::([^;]*);',s):
        mod,rest=mm.group(1),mm.group(2)
        if mod not in tops: continue
        names=re.findall(r'\b([A-Za-z_][A-Za-z0-9_]*)\b(?:\s+as\s+([A-Za-z_][A-Za-z0-9_]*))?',rest)
        for a,b in names:
            m[b or a]=mod
    return m
def analyse(root):
    src=os.path.join(root,'src')
    tops=set()
    for f in os.listdir(src):
        if f.endswith('.rs') and f not in ('lib.rs','main.rs'): tops.add(f[:-3])
        elif os.path.isdir(os.path.join(src,f)): tops.add(f)
    lib=open(os.path.join(src,'lib.rs')).read() if os.path.exists(os.path.join(src,'lib.rs')) else ''
    rex=parse_reexports(lib,tops)
    edges=collections.defaultdict(set)
    for dp,_,fs in os.walk(src):
        for f in fs:
            if not f.endswith('.rs'): continue
            p=os.path.relpath(os.path.join(dp,f),src)
            parts=p.split('/')
            top=parts[0][:-3] if len(parts)==1 else parts[0]
            if top in ('lib','main'): continue
            s=re.sub(r'//.*','',open(os.path.join(dp,f)).read())
            refs=set()
            for path in re.findall(r'\bcrate::((?:[A-Za-z_][A-Za-z0-9_]*))',s): refs.add(path)
            for g in re.findall(r'\bcrate::\{([^}]*)\}',s):
                for it in g.split(','):
                    it=it.strip().split('::')[0]
                    if it: refs.add(it)
            if len(parts)==1:
                for path in re.findall(r'\bsuper::([A-Za-z_][A-Za-z0-9_]*)',s): refs.add(path)
                for g in re.findall(r'\bsuper::\{([^}]*)\}',s):
                    for it in g.split(','):
                        it=it.strip().split('::')[0]
                        if it: refs.add(it)
            for r in refs:
                t=r if r in tops else rex.get(r)
                if t and t!=top: edges[top].add(t)
    idx={};low={};st=[];on=set();sccs=[];c=[0]
    nodes=set(edges)|{v for vs in edges.values() for v in vs}
    def sc(v):
        idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
        for w in sorted(edges.get(v,())):
            if w not in idx: sc(w);low[v]=min(low[v],low[w])
            elif w in on: low[v]=min(low[v],idx[w])
        if low[v]==idx[v]:
            comp=[]
            while True:
                w=st.pop();on.discard(w);comp.append(w)
                if w==v: break
            sccs.append(comp)
    for v in sorted(nodes):
        if v not in idx: sc(v)
    cyc=[sorted(x) for x in sccs if len(x)>1]
    return edges,cyc


def back_arrows(edges):
    """A small set of arrows whose removal leaves no circle (Eades, Lin
    and Smyth's greedy order: sinks last, sources first, else the node
    with the most arrows out over in)."""
    nodes = set(edges) | {w for vs in edges.values() for w in vs}
    out = {v: set(edges.get(v, ())) for v in nodes}
    inn = {v: {u for u in nodes if v in out[u]} for v in nodes}
    left, head, tail = set(nodes), [], []
    while left:
        changed = True
        while changed:
            changed = False
            for v in sorted(left):
                if not (out[v] & left):
                    tail.insert(0, v); left.discard(v); changed = True
                elif not (inn[v] & left):
                    head.append(v); left.discard(v); changed = True
        if left:
            v = max(sorted(left), key=lambda v: len(out[v] & left) - len(inn[v] & left))
            head.append(v); left.discard(v)
    order = {v: i for i, v in enumerate(head + tail)}
    return sorted((v, w) for v in nodes for w in out[v] if order[w] < order[v])


def main():
    roots = sys.argv[1:] or sorted(
        os.path.dirname(os.path.relpath(os.path.join(d, "Cargo.toml")))
        for d, _, fs in os.walk(".")
        if "Cargo.toml" in fs and os.path.isdir(os.path.join(d, "src")) and "target" not in d and d != "."
    )
    total = 0
    for root in roots:
        if not os.path.isdir(os.path.join(root, "src")):
            continue
        edges, circles = analyse(root)
        back = back_arrows(edges)
        total += len(circles)
        arrows = sum(len(v) for v in edges.values())
        print(f"{root}: {arrows} arrows, {len(circles)} circles {circles}, {len(back)} pointing back up {back}")
    print(f"circles in all: {total}")


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main()

//! [`Printer`]: the [`Rows`] that writes a row op as the text of a
//! `kernel!` general kernel, one workgroup per row. Each reduction is a
//! strided loop of the workgroup's lanes and a tree (`workgroup_sum`,
//! `workgroup_max`); each write a strided loop; a lone entry or a row's
//! own value is written by the lane that owns it.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::ops::{Add, Div, Mul, Neg, Sub};

use super::Rows;

/// The lanes of a row's workgroup.
pub(super) const LANES: usize = 64;

thread_local! {
    /// The text of every [`Sym`] made on this thread.
    static TEXT: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// A value in a printed kernel: an expression's text, kept by index so
/// that values copy as the CPU's numbers do.
#[derive(Clone, Copy, Debug)]
pub struct Sym(usize);

impl Sym {
    /// The value whose text is `text`.
    pub fn new(text: impl Into<String>) -> Sym {
        TEXT.with(|t| {
            let mut t = t.borrow_mut();
            t.push(text.into());
            Sym(t.len() - 1)
        })
    }

    /// Its text.
    pub fn text(self) -> String {
        TEXT.with(|t| t.borrow()[self.0].clone())
    }
}

macro_rules! binary {
    ($($trait:ident $f:ident $op:literal),*) => {$(
        impl $trait for Sym {
            type Output = Sym;
            fn $f(self, o: Sym) -> Sym {
                Sym::new(format!("({} {} {})", self.text(), $op, o.text()))
            }
        }
    )*};
}
binary!(Add add "+", Sub sub "-", Mul mul "*", Div div "/");

impl Neg for Sym {
    type Output = Sym;
    fn neg(self) -> Sym {
        Sym::new(format!("(-{})", self.text()))
    }
}

/// Where a row's entries live in a buffer: an index expression with `@`
/// for the entry's position in the row (`"x[base + @ * inner]"`), or for
/// a row's own values its slot (`"stats[2 * j + @]"`).
#[derive(Clone, Copy, Debug)]
pub struct Place(pub &'static str);

impl Place {
    /// The entry at position `k`.
    fn at(self, k: &str) -> String {
        self.0.replace('@', k)
    }

    /// Its entry at the loop's position `k`, as a value.
    fn here(self) -> Sym {
        Sym::new(self.at("k"))
    }
}

/// What a printer prints: a row kernel's body, or only the sums over rows
/// that [`Rows::update_summing`] asks for (a kernel of its own, per
/// column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Rows,
    Columns,
}

/// A row op printed as `kernel!` statements.
#[derive(Debug)]
pub struct Printer {
    mode: Mode,
    body: String,
    depth: usize,
    names: usize,
    /// The sums over rows [`Rows::update_summing`] asked for: where each goes
    /// and its term.
    columns: Vec<(Place, String)>,
}

impl Printer {
    fn new(mode: Mode, depth: usize) -> Printer {
        Printer { mode, body: String::new(), depth, names: 0, columns: Vec::new() }
    }

    fn line(&mut self, s: &str) {
        if self.mode == Mode::Rows {
            let _ = writeln!(self.body, "{:w$}{s}", "", w = 4 * self.depth);
        }
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.names += 1;
        format!("{prefix}{}", self.names)
    }

    /// A strided loop of the lanes over entries `from..to` with `body`.
    fn strided(&mut self, from: &str, to: &str, body: &[String]) {
        self.line(&format!("k = {from};"));
        self.line(&format!("while k < {to} {{"));
        self.depth += 1;
        for b in body {
            self.line(b);
        }
        self.line(&format!("k += {LANES};"));
        self.depth -= 1;
        self.line("}");
    }

    /// A reduction over the entries a row sees: `init`, each entry's
    /// `step` on the lane's accumulator (`{a}` in it), then the tree.
    fn reduce(&mut self, init: &str, step: impl Fn(&str) -> Vec<String>, tree: &str) -> Sym {
        let (a, t) = (self.fresh("a"), self.fresh("t"));
        self.line(&format!("let mut {a} = {init};"));
        self.strided("lane", "seen", &step(&a));
        self.line(&format!("let {t} = {tree}({a});"));
        Sym::new(t)
    }

    fn each<const N: usize>(ins: [Place; N]) -> [Sym; N] {
        ins.map(Place::here)
    }
}

impl Rows for Printer {
    type V = Sym;
    type B = Sym;
    type In = Place;
    type Out = Place;
    type Idx = Sym;

    fn lit(v: f64) -> Sym {
        assert!(v.is_finite(), "a printed kernel spells only finite literals, not {v}");
        Sym::new(format!("({v:?})"))
    }

    fn exp(v: Sym) -> Sym {
        Sym::new(format!("exp({})", v.text()))
    }

    fn ln(v: Sym) -> Sym {
        Sym::new(format!("log({})", v.text()))
    }

    fn sqrt(v: Sym) -> Sym {
        Sym::new(format!("sqrt({})", v.text()))
    }

    fn count(&self) -> Sym {
        Sym::new("(seen as f32)")
    }

    fn is_neg_inf(&mut self, v: Sym) -> Sym {
        // Below every finite f32: the kernels hold f32.
        Sym::new(format!("({} < -3.4028235e38)", v.text()))
    }

    fn has_nan(&mut self, x: Place, _top: Sym) -> Sym {
        // A device's `max` may drop a NaN, so the lanes flag their own.
        let v = x.at("k");
        let t = self.reduce("0.0", |a| vec![format!("if {v} != {v} {{ {a} = 1.0; }}")], "workgroup_sum");
        Sym::new(format!("({} > 0.0)", t.text()))
    }

    fn written(&self, out: Place) -> Place {
        out
    }

    fn sum<const N: usize>(&mut self, ins: [Place; N], f: impl Fn([Sym; N]) -> Sym) -> Sym {
        let term = f(Self::each(ins)).text();
        self.reduce("0.0", |a| vec![format!("{a} += {term};")], "workgroup_sum")
    }

    fn sum2<const N: usize>(&mut self, ins: [Place; N], f: impl Fn([Sym; N]) -> [Sym; 2]) -> [Sym; 2] {
        let terms = f(Self::each(ins)).map(Sym::text);
        let acc = [self.fresh("a"), self.fresh("a")];
        for a in &acc {
            self.line(&format!("let mut {a} = 0.0;"));
        }
        let steps: Vec<String> = acc.iter().zip(&terms).map(|(a, t)| format!("{a} += {t};")).collect();
        self.strided("lane", "seen", &steps);
        acc.map(|a| {
            let t = self.fresh("t");
            self.line(&format!("let {t} = workgroup_sum({a});"));
            Sym::new(t)
        })
    }

    fn max(&mut self, x: Place) -> Sym {
        let (first, v) = (x.at("0"), x.at("k"));
        self.reduce(&first, |a| vec![format!("{a} = max({a}, {v});")], "workgroup_max")
    }

    fn write<const N: usize>(&mut self, out: Place, ins: [Place; N], f: impl Fn([Sym; N]) -> Sym) {
        let value = f(Self::each(ins)).text();
        self.strided("lane", "seen", &[format!("{} = {value};", out.at("k"))]);
    }

    fn write_sum<const N: usize>(&mut self, out: Place, ins: [Place; N], f: impl Fn([Sym; N]) -> Sym) -> Sym {
        let (value, e) = (f(Self::each(ins)).text(), self.fresh("e"));
        self.reduce(
            "0.0",
            |a| vec![format!("let {e} = {value};"), format!("{} = {e};", out.at("k")), format!("{a} += {e};")],
            "workgroup_sum",
        )
    }

    fn update<const N: usize>(&mut self, out: Place, ins: [Place; N], f: impl Fn(Sym, [Sym; N]) -> Sym) {
        // Each lane reads back the entries it wrote: no barrier is needed.
        let value = f(out.here(), Self::each(ins)).text();
        self.strided("lane", "seen", &[format!("{} = {value};", out.at("k"))]);
    }

    fn fill_hidden(&mut self, out: Place, v: Sym) {
        self.strided("seen + lane", "n", &[format!("{} = {};", out.at("k"), v.text())]);
    }

    fn read_at(&mut self, x: Place, at: Sym) -> Sym {
        Sym::new(x.at(&at.text()))
    }

    fn poke(&mut self, out: Place, at: Sym, f: impl Fn(Sym) -> Sym) {
        // The lane whose strided loops wrote that entry.
        let (at, entry) = (at.text(), out.at(&at.text()));
        let value = f(Sym::new(entry.clone())).text();
        self.line(&format!("if {at} % {LANES} == lane {{ {entry} = {value}; }}"));
    }

    fn put(&mut self, out: Place, slot: usize, v: Sym) {
        self.line(&format!("if lane == 0 {{ {} = {}; }}", out.at(&slot.to_string()), v.text()));
    }

    fn update_summing<const M: usize, const N: usize>(
        &mut self,
        out: Place,
        sums: [Place; M],
        ins: [Place; N],
        f: impl Fn(Sym, [Sym; N]) -> (Sym, [Sym; M]),
    ) {
        let (value, terms) = f(out.here(), Self::each(ins));
        match self.mode {
            Mode::Rows => self.strided("lane", "seen", &[format!("{} = {};", out.at("k"), value.text())]),
            Mode::Columns => self.columns.extend(sums.into_iter().zip(terms.map(Sym::text))),
        }
    }

    fn branch(&mut self, c: Sym, then: impl FnOnce(&mut Self), otherwise: impl FnOnce(&mut Self)) {
        self.line(&format!("if {} {{", c.text()));
        self.depth += 1;
        then(self);
        self.depth -= 1;
        self.line("} else {");
        self.depth += 1;
        otherwise(self);
        self.depth -= 1;
        self.line("}");
    }

    fn choose(&mut self, c: Sym, then: impl FnOnce(&mut Self) -> Sym, otherwise: Sym) -> Sym {
        let t = self.fresh("t");
        self.line(&format!("let mut {t} = {};", otherwise.text()));
        self.line(&format!("if {} {{", c.text()));
        self.depth += 1;
        let v = then(self).text();
        self.line(&format!("{t} = {v};"));
        self.depth -= 1;
        self.line("}");
        Sym::new(t)
    }
}

/// A kernel's frame: its doc line, name, parameters, and the lines that
/// start each row (they bind `base` and `seen`, and what the op's places
/// and values name).
pub(super) struct Frame {
    pub doc: &'static str,
    pub name: &'static str,
    pub params: &'static str,
    pub prologue: &'static str,
}

fn header(f: &Frame) -> String {
    format!("/// {}\n#[workgroup({LANES})]\nfn {}({}) {{\n    let lane = local_id();\n", f.doc, f.name, f.params)
}

/// A kernel with a workgroup per row (`j`, striding over `rows`) running
/// `op`'s body.
pub(super) fn row_kernel(f: &Frame, op: impl FnOnce(&mut Printer)) -> String {
    let mut p = Printer::new(Mode::Rows, 2);
    op(&mut p);
    format!(
        "{}    let mut k = lane;\n    let mut j = workgroup_id();\n    while j < rows {{\n{}{}        j += num_workgroups();\n    }}\n}}\n",
        header(f),
        f.prologue,
        p.body,
    )
}

/// A kernel with a workgroup per column `k` (striding over `n`) that sums
/// over the rows `j` what `op` accumulates, the prologue run per row.
pub(super) fn column_kernel(f: &Frame, op: impl FnOnce(&mut Printer)) -> String {
    let mut p = Printer::new(Mode::Columns, 0);
    op(&mut p);
    let mut s = header(f);
    s += "    let mut k = workgroup_id();\n    while k < n {\n";
    for (i, _) in p.columns.iter().enumerate() {
        let _ = writeln!(s, "        let mut c{i} = 0.0;");
    }
    s += "        let mut j = lane;\n        while j < rows {\n";
    s += f.prologue;
    for (i, (_, term)) in p.columns.iter().enumerate() {
        let _ = writeln!(s, "            c{i} += {term};");
    }
    let _ = writeln!(s, "            j += {LANES};\n        }}");
    for (i, _) in p.columns.iter().enumerate() {
        let _ = writeln!(s, "        let s{i} = workgroup_sum(c{i});");
    }
    s += "        if lane == 0 {\n";
    for (i, (out, _)) in p.columns.iter().enumerate() {
        let _ = writeln!(s, "            {} = s{i};", out.at("k"));
    }
    s += "        }\n        k += num_workgroups();\n    }\n}\n";
    s
}

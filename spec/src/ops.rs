//! The elementwise ops, each written once. An op of one tensor
//! ([`UNARY`]): its name, the dtypes it takes, its parameters, its scalar
//! body in the `kernel!` DSL and, where the derived one is numerically
//! poor or needs what the training forward does not keep, its
//! derivative. An op of two tensors ([`BINARY`]): its name, dtypes, cost
//! and body, from which its kernel and partials are printed as below. A
//! comparison ([`COMPARE`]): its name, operator and value with NaN. A
//! reduction over a dim ([`REDUCE`]): a fold's operator, or what a
//! selection's winner beats.
//!
//! `blaze-macros` parses these bodies into its kernel IR and prints from
//! them everything that computes the op: the runtime's `UnaryOp` enum, its
//! tensor methods and one `Elementwise` kernel per op (the CPU's loop body
//! and the WGSL the wgpu backend runs), the CubeCL backend's `#[cube]`
//! functions, the gradient kernels the tape runs, the calls a fused group
//! makes, the functions a `#[model]` forward body may call and, for an
//! entry with `layer`, the layer (`Layer::Unary`). So the unfused op, the
//! op inside a fused group and its gradient compute the same function on
//! every backend, and a new op is one entry here, plus its record in
//! `tests/fixtures/make_unary_fixture.py` (the conformance suite checks
//! every op against PyTorch).

/// Which dtypes an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// Floats only.
    Float,
    /// Floats and i64 (the integer form is the backend's own: `wrapping_neg`,
    /// `wrapping_abs`, `signum`).
    Signed,
    /// Bool only; the op has no float body.
    Bool,
}

/// What the op costs per element, which decides when a backend splits it
/// over threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cost {
    /// A few arithmetic instructions: memory-bound.
    Cheap,
    /// A transcendental function: compute-bound.
    Costly,
}

/// The derivative of an op by its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Grad {
    /// Derived from the body by the kernel IR's symbolic differentiation.
    Derived,
    /// Written in terms of the input `x` (and the parameters).
    OfInput(&'static str),
    /// Written in terms of the output `y` alone: the training forward then
    /// keeps the output, not the input (a bias pass with this activation
    /// never stores its input).
    OfOutput(&'static str),
}

/// One elementwise op of one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Unary {
    /// The `UnaryOp` variant.
    pub variant: &'static str,
    /// The op's name: the tensor method (taking the parameters in order),
    /// the function of a `#[model]` forward body, and the kernel's name
    /// (PyTorch's, lower case).
    pub name: &'static str,
    /// The ONNX operator of the default domain that computes the same
    /// function, if there is one (`Relu`); empty otherwise, and then the
    /// exporter writes the op's `body` as ONNX operators. The importer
    /// reads each operator named here as the op.
    pub onnx: &'static str,
    /// A sentence saying what it computes.
    pub doc: &'static str,
    /// Its `f64` parameters besides the input (the variant's fields).
    pub params: &'static [&'static str],
    /// The dtypes it takes.
    pub domain: Domain,
    /// What it costs per element.
    pub cost: Cost,
    /// The body of `fn name(x: f32, params..: f32) -> f32` in the
    /// `kernel!` DSL; empty for a bool op.
    pub body: &'static str,
    /// Its derivative by `x`.
    pub grad: Grad,
    /// Whether it is also a layer (`Layer::Unary`), named after its
    /// variant as PyTorch's `nn` names it (`Sigmoid`, `Relu`); only an op
    /// without parameters is.
    pub layer: bool,
}

/// `l = log(1 + u)` for `u = e^-|x|` (or of the variable named), exact
/// where `1 + u` rounds (Goldberg's form: the rounding of `w = 1 + u`
/// cancels in `log(w) u / (w - 1)`): the start of a body that needs
/// `softplus(x) = max(x, 0) + l` without overflow.
macro_rules! log1p_exp_neg_abs {
    () => {
        log1p_exp_neg_abs!("x")
    };
    ($x:literal) => {
        concat!("let u = exp(-abs(", $x, ")); let w = 1.0 + u; let l = select(w == 1.0, u, log(w) * u / (w - 1.0));")
    };
}

/// The most parameters an op takes besides its input.
pub const MAX_UNARY_PARAMS: usize = 2;

/// Every elementwise op of one tensor, in the order of `UnaryOp`'s variants.
pub const UNARY: &[Unary] = &[
    Unary {
        variant: "Neg",
        name: "neg",
        onnx: "Neg",
        doc: "`-x` (floats and i64).",
        params: &[],
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "-x",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Abs",
        name: "abs",
        onnx: "Abs",
        doc: "`|x|` (floats and i64).",
        params: &[],
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "abs(x)",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Exp",
        name: "exp",
        onnx: "Exp",
        doc: "`e^x`.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "exp(x)",
        grad: Grad::OfOutput("y"),
        layer: false,
    },
    Unary {
        variant: "Log",
        name: "log",
        onnx: "Log",
        doc: "Natural logarithm.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "log(x)",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Sqrt",
        name: "sqrt",
        onnx: "Sqrt",
        doc: "Square root.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "sqrt(x)",
        grad: Grad::OfOutput("0.5 / y"),
        layer: false,
    },
    Unary {
        variant: "Recip",
        name: "recip",
        onnx: "Reciprocal",
        doc: "`1 / x`.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "1.0 / x",
        grad: Grad::OfOutput("-(y * y)"),
        layer: false,
    },
    Unary {
        variant: "Tanh",
        name: "tanh",
        onnx: "Tanh",
        doc: "Hyperbolic tangent.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "tanh(x)",
        grad: Grad::OfOutput("1.0 - y * y"),
        layer: true,
    },
    Unary {
        variant: "Sigmoid",
        name: "sigmoid",
        onnx: "Sigmoid",
        doc: "`1 / (1 + e^-x)`.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "1.0 / (1.0 + exp(-x))",
        // The derived `e^-x / (1 + e^-x)²` is inf / inf below x ≈ -88.
        grad: Grad::OfOutput("y * (1.0 - y)"),
        layer: true,
    },
    Unary {
        variant: "Relu",
        name: "relu",
        onnx: "Relu",
        doc: "`max(x, 0)`; NaN passes through.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "select(x < 0.0, 0.0, x)",
        // PyTorch's relu'(0) = 0.
        grad: Grad::OfOutput("select(y > 0.0, 1.0, 0.0)"),
        layer: true,
    },
    Unary {
        variant: "Gelu",
        name: "gelu",
        onnx: "",
        doc: "Exact GELU, `x * Φ(x)` (PyTorch's default `approximate='none'`).",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "0.5 * x * (1.0 + erf(x * 0.7071067811865476))",
        // Φ(x) + x φ(x), with φ the normal density.
        grad: Grad::OfInput("0.5 * (1.0 + erf(x * 0.7071067811865476)) + x * exp(-0.5 * x * x) * 0.3989422804014327"),
        layer: true,
    },
    Unary {
        variant: "GeluTanh",
        name: "gelu_tanh",
        onnx: "",
        doc: "GELU's tanh approximation, `x/2 (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))` (PyTorch's `approximate='tanh'`, GPT-2's `gelu_new`).",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))",
        grad: Grad::Derived,
        layer: true,
    },
    Unary {
        variant: "LeakyRelu",
        name: "leaky_relu",
        onnx: "",
        doc: "`max(x, 0) + negative_slope * min(x, 0)` (PyTorch's default slope is 0.01).",
        params: &["negative_slope"],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "select(x > 0.0, x, x * negative_slope)",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Sin",
        name: "sin",
        onnx: "Sin",
        doc: "Sine.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "sin(x)",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Cos",
        name: "cos",
        onnx: "Cos",
        doc: "Cosine.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "cos(x)",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Erf",
        name: "erf",
        onnx: "Erf",
        doc: "The error function.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "erf(x)",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Floor",
        name: "floor",
        onnx: "Floor",
        doc: "Round down.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "floor(x)",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Ceil",
        name: "ceil",
        onnx: "Ceil",
        doc: "Round up.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "ceil(x)",
        grad: Grad::Derived,
        layer: false,
    },
    Unary {
        variant: "Sign",
        name: "sign",
        onnx: "Sign",
        doc: "-1, 0 or 1 (floats and i64); NaN and the sign of zero pass through.",
        params: &[],
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "select(x > 0.0, 1.0, select(x < 0.0, -1.0, x))",
        // 0 everywhere, as PyTorch (derived, the NaN-passing branch would
        // give 1 at 0).
        grad: Grad::OfInput("0.0"),
        layer: false,
    },
    Unary {
        variant: "Relu6",
        name: "relu6",
        onnx: "",
        doc: "`min(max(x, 0), 6)`; NaN passes through.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "min(max(x, 0.0), 6.0)",
        // 0 at both kinks, as PyTorch's hardtanh.
        grad: Grad::OfInput("select(x > 0.0 && x < 6.0, 1.0, 0.0)"),
        layer: true,
    },
    Unary {
        variant: "Hardsigmoid",
        name: "hardsigmoid",
        onnx: "",
        doc: "`relu6(x + 3) / 6`.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "min(max(x + 3.0, 0.0), 6.0) / 6.0",
        grad: Grad::OfInput("select(x > -3.0 && x < 3.0, 1.0 / 6.0, 0.0)"),
        layer: true,
    },
    Unary {
        variant: "Hardswish",
        name: "hardswish",
        onnx: "HardSwish",
        doc: "`x * relu6(x + 3) / 6`.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "x * min(max(x + 3.0, 0.0), 6.0) / 6.0",
        // PyTorch's: 0 up to -3, x / 3 + 1/2 strictly between, 1 from 3.
        grad: Grad::OfInput("select(x <= -3.0, 0.0, select(x < 3.0, x / 3.0 + 0.5, 1.0))"),
        layer: true,
    },
    Unary {
        variant: "Mish",
        name: "mish",
        onnx: "Mish",
        doc: "`x * tanh(softplus(x))`.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: concat!(log1p_exp_neg_abs!(), " x * tanh(max(x, 0.0) + l)"),
        // tanh(sp) + x σ(x) (1 - tanh(sp)²), with σ(x) = e^-softplus(-x)
        // written so that neither exponential overflows.
        grad: Grad::OfInput(concat!(
            log1p_exp_neg_abs!(),
            " let t = tanh(max(x, 0.0) + l);",
            " let s = select(x < 0.0, u / (1.0 + u), 1.0 / (1.0 + u));",
            " t + x * s * (1.0 - t * t)"
        )),
        layer: true,
    },
    Unary {
        variant: "Softsign",
        name: "softsign",
        onnx: "Softsign",
        doc: "`x / (1 + |x|)`.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Cheap,
        body: "x / (1.0 + abs(x))",
        grad: Grad::OfInput("let d = 1.0 + abs(x); 1.0 / (d * d)"),
        layer: true,
    },
    Unary {
        variant: "LogSigmoid",
        name: "logsigmoid",
        onnx: "",
        doc: "`log(1 / (1 + e^-x))`, as `min(x, 0) - log(1 + e^-|x|)` so that it never overflows.",
        params: &[],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: concat!(log1p_exp_neg_abs!(), " min(x, 0.0) - l"),
        // σ(-x), from the same exponential of a non-positive number.
        grad: Grad::OfInput("let u = exp(-abs(x)); select(x < 0.0, 1.0 / (1.0 + u), u / (1.0 + u))"),
        layer: true,
    },
    Unary {
        variant: "Softplus",
        name: "softplus",
        onnx: "",
        doc: "`log(1 + exp(beta x)) / beta`, the identity where `beta x > threshold` (PyTorch's defaults: 1, 20).",
        params: &["beta", "threshold"],
        domain: Domain::Float,
        cost: Cost::Costly,
        body: concat!(
            "let z = beta * x; ",
            log1p_exp_neg_abs!("z"),
            " select(z > threshold, x, (max(z, 0.0) + l) / beta)"
        ),
        // σ(beta x), from the same exponential of a non-positive number.
        grad: Grad::OfInput(
            "let z = beta * x; let u = exp(-abs(z)); select(z > threshold, 1.0, select(z < 0.0, u / (1.0 + u), 1.0 / (1.0 + u)))",
        ),
        layer: false,
    },
    Unary {
        variant: "Elu",
        name: "elu",
        onnx: "",
        doc: "`x` above zero, `alpha (exp(x) - 1)` below (PyTorch's default alpha is 1).",
        params: &["alpha"],
        domain: Domain::Float,
        cost: Cost::Costly,
        // exp(x) - 1 in Kahan's form, exact near 0: the rounding of
        // `u = exp(x)` cancels in `(u - 1) x / log(u)`; `u - 1 = -1` where
        // exp(x) underflowed, and there log(0) would give 0 / inf.
        body: "let u = exp(x); let d = u - 1.0; \
               let m = select(d == 0.0, x, select(d == -1.0, d, d * (x / log(u)))); \
               select(x > 0.0, x, alpha * m)",
        grad: Grad::OfInput("select(x > 0.0, 1.0, alpha * exp(x))"),
        layer: false,
    },
    Unary {
        variant: "Not",
        name: "logical_not",
        onnx: "Not",
        doc: "Logical not (bool only).",
        params: &[],
        domain: Domain::Bool,
        cost: Cost::Cheap,
        body: "",
        grad: Grad::Derived,
        layer: false,
    },
];

/// The entry of the op named `name`.
pub fn unary(name: &str) -> Option<&'static Unary> {
    UNARY.iter().find(|u| u.name == name)
}

/// One elementwise op of two tensors of one dtype (broadcast against each
/// other, or the second a number). Its derivatives by `a` and `b` are
/// derived from the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Binary {
    /// The `BinaryOp` variant.
    pub variant: &'static str,
    /// The op's name: its kernel's (PyTorch's, lower case), its tensor
    /// method's (`x.pow(&y)`) and in messages.
    pub name: &'static str,
    /// The ONNX operator of the default domain that computes it (numpy's
    /// broadcasting, as Blaze's).
    pub onnx: &'static str,
    /// The tensor method that takes a number as `b` (`x.powf(2.0)`,
    /// `x.clamp_min(0.0)`); empty for a bool op.
    pub with_number: &'static str,
    /// A sentence saying what it computes.
    pub doc: &'static str,
    /// The dtypes it takes.
    pub domain: Domain,
    /// What it costs per element.
    pub cost: Cost,
    /// The body of `fn name(a: f32, b: f32) -> f32` in the `kernel!` DSL;
    /// empty for a bool op.
    pub body: &'static str,
    /// Its derivatives by `a` and by `b`, written in both, where PyTorch's
    /// differ from the ones derived from the body; `None`: derived.
    pub grads: Option<[&'static str; 2]>,
}

/// Every elementwise op of two tensors, in the order of `BinaryOp`'s
/// variants.
pub const BINARY: &[Binary] = &[
    Binary {
        variant: "Add",
        name: "add",
        onnx: "Add",
        with_number: "add_scalar",
        doc: "`a + b` (floats, i64).",
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "a + b",
        grads: None,
    },
    Binary {
        variant: "Sub",
        name: "sub",
        onnx: "Sub",
        with_number: "sub_scalar",
        doc: "`a - b` (floats, i64).",
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "a - b",
        grads: None,
    },
    Binary {
        variant: "Mul",
        name: "mul",
        onnx: "Mul",
        with_number: "mul_scalar",
        doc: "`a * b` (floats, i64).",
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "a * b",
        grads: None,
    },
    Binary {
        variant: "Div",
        name: "div",
        onnx: "Div",
        with_number: "div_scalar",
        doc: "`a / b` (floats; i64 rounds toward zero).",
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "a / b",
        grads: None,
    },
    Binary {
        variant: "Pow",
        name: "pow",
        onnx: "Pow",
        with_number: "powf",
        doc: "`a ^ b` (floats): a negative `a` to an integer `b` keeps its sign, as `torch.pow`.",
        domain: Domain::Float,
        cost: Cost::Costly,
        body: "pow(a, b)",
        grads: None,
    },
    Binary {
        variant: "Maximum",
        name: "maximum",
        onnx: "Max",
        with_number: "clamp_min",
        doc: "Elementwise maximum, NaN-propagating (floats, i64).",
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "max(a, b)",
        // PyTorch's: ties split the gradient, and NaN passes it to both
        // (the derived one gives ties to `a`).
        grads: Some(["select(a == b, 0.5, select(a < b, 0.0, 1.0))", "select(a == b, 0.5, select(a > b, 0.0, 1.0))"]),
    },
    Binary {
        variant: "Minimum",
        name: "minimum",
        onnx: "Min",
        with_number: "clamp_max",
        doc: "Elementwise minimum, NaN-propagating (floats, i64).",
        domain: Domain::Signed,
        cost: Cost::Cheap,
        body: "min(a, b)",
        grads: Some(["select(a == b, 0.5, select(a > b, 0.0, 1.0))", "select(a == b, 0.5, select(a < b, 0.0, 1.0))"]),
    },
    Binary {
        variant: "And",
        name: "logical_and",
        onnx: "And",
        with_number: "",
        doc: "Logical and (bool).",
        domain: Domain::Bool,
        cost: Cost::Cheap,
        body: "",
        grads: None,
    },
    Binary {
        variant: "Or",
        name: "logical_or",
        onnx: "Or",
        with_number: "",
        doc: "Logical or (bool).",
        domain: Domain::Bool,
        cost: Cost::Cheap,
        body: "",
        grads: None,
    },
];

/// The entry of the binary op named `name`.
pub fn binary(name: &str) -> Option<&'static Binary> {
    BINARY.iter().find(|b| b.name == name)
}

/// One elementwise comparison of two tensors of one dtype (broadcast, or
/// the second a number), giving a bool tensor. Its operator is the same
/// in Rust, WGSL and `#[cube]` code; with a NaN operand every comparison
/// is `unordered` (IEEE 754: false, but true for `!=`), which backends
/// whose shader compilers may assume there is no NaN (WGSL) decide by the
/// bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Compare {
    /// The `CmpOp` variant.
    pub variant: &'static str,
    /// The op's name (PyTorch's) as it appears in messages.
    pub name: &'static str,
    /// The operator, `a <op> b`.
    pub symbol: &'static str,
    /// Its value when either operand is NaN.
    pub unordered: bool,
}

/// Every comparison, in the order of `CmpOp`'s variants.
pub const COMPARE: &[Compare] = &[
    Compare { variant: "Eq", name: "eq", symbol: "==", unordered: false },
    Compare { variant: "Ne", name: "ne", symbol: "!=", unordered: true },
    Compare { variant: "Lt", name: "lt", symbol: "<", unordered: false },
    Compare { variant: "Le", name: "le", symbol: "<=", unordered: false },
    Compare { variant: "Gt", name: "gt", symbol: ">", unordered: false },
    Compare { variant: "Ge", name: "ge", symbol: ">=", unordered: false },
];

/// One reduction over a dim of a tensor of floats or i64. A fold
/// combines the row's values with its operator from 0; a selection keeps
/// a value that beats the others by its operator (`v > best` for a max),
/// a NaN beating every number and staying, and gives that value or, with
/// `index`, the position of the first such value (as i64). Of equal values
/// the value form may keep any (0 and -0 compare equal). Every backend's reduction
/// loop is generated from this step; a backend that starts from a
/// constant (a shader's tree) starts a selection from the value every
/// number beats or ties (`-inf` for `>`, `+inf` for `<`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reduce {
    /// The `ReduceOp` variant.
    pub variant: &'static str,
    /// The op's name (PyTorch's) as it appears in messages.
    pub name: &'static str,
    /// What the op does with the row's values.
    pub kind: ReduceKind,
}

/// How a [`Reduce`] combines a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    /// `acc <op> v` over the row from 0: the operator (`+`).
    Fold(&'static str),
    /// The first value `v` with `v <op> best`; NaN wins. `index`: the
    /// result is its position, not its value.
    Select {
        /// The operator, `>` or `<`.
        beats: &'static str,
        /// The result is the position.
        index: bool,
    },
}

/// Every reduction, in the order of `ReduceOp`'s variants.
pub const REDUCE: &[Reduce] = &[
    Reduce { variant: "Sum", name: "sum", kind: ReduceKind::Fold("+") },
    Reduce { variant: "Max", name: "max", kind: ReduceKind::Select { beats: ">", index: false } },
    Reduce { variant: "Min", name: "min", kind: ReduceKind::Select { beats: "<", index: false } },
    Reduce { variant: "ArgMax", name: "argmax", kind: ReduceKind::Select { beats: ">", index: true } },
    Reduce { variant: "ArgMin", name: "argmin", kind: ReduceKind::Select { beats: "<", index: true } },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_variants_are_unique_and_params_fit() {
        for (i, a) in UNARY.iter().enumerate() {
            assert!(a.params.len() <= MAX_UNARY_PARAMS, "{}", a.name);
            assert_eq!(a.body.is_empty(), a.domain == Domain::Bool, "{}: a body exactly for a non-bool op", a.name);
            assert!(
                !a.layer || a.params.is_empty() && a.domain == Domain::Float,
                "{}: a layer takes floats alone",
                a.name
            );
            for b in &UNARY[i + 1..] {
                assert!(a.name != b.name && a.variant != b.variant, "{} twice", a.name);
            }
        }
        assert_eq!(unary("sigmoid").map(|u| u.variant), Some("Sigmoid"));
        assert_eq!(binary("maximum").map(|b| b.with_number), Some("clamp_min"));
        for (i, a) in BINARY.iter().enumerate() {
            assert_eq!(a.body.is_empty(), a.domain == Domain::Bool, "{}: a body exactly for a non-bool op", a.name);
            assert_eq!(a.with_number.is_empty(), a.domain == Domain::Bool, "{}: a number form for a float op", a.name);
            for b in &BINARY[i + 1..] {
                assert!(a.name != b.name && a.variant != b.variant, "{} twice", a.name);
            }
        }
        for (i, a) in REDUCE.iter().enumerate() {
            match a.kind {
                ReduceKind::Fold(op) => {
                    assert_eq!(op, "+", "{}: a fold from 0 needs an operator 0 is neutral for", a.name)
                }
                ReduceKind::Select { beats, .. } => {
                    assert!(beats == ">" || beats == "<", "{}: a selection orders", a.name)
                }
            }
            for b in &REDUCE[i + 1..] {
                assert!(a.name != b.name && a.variant != b.variant && a.kind != b.kind, "{} twice", a.name);
            }
        }
        for (i, a) in COMPARE.iter().enumerate() {
            assert_eq!(a.unordered, a.symbol == "!=", "{}: IEEE 754 says only != holds with NaN", a.name);
            for b in &COMPARE[i + 1..] {
                assert!(a.name != b.name && a.variant != b.variant && a.symbol != b.symbol, "{} twice", a.name);
            }
        }
    }
}

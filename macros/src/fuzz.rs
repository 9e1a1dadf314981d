//! Seeded mutation fuzzing of every macro: valid `#[model]` structs,
//! forward bodies, `kernel!` functions (elementwise and general) and
//! `#[derive(Module)]` inputs are mutated token by token (deleted,
//! duplicated, swapped, replaced by other identifiers, literals and
//! punctuation, groups emptied, unwrapped or re-delimited), thousands of
//! times each, and every expansion must return code or a compile error:
//! a panic is a bug. The seed is fixed, so a failure reproduces; the
//! message prints the input that broke. `BLAZE_FUZZ_CASES=100000` and
//! `BLAZE_FUZZ_SEED=n` run a longer or another search.

use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::quote;

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const IDENTS: &[&str] = &[
    "x",
    "self",
    "Self",
    "fn",
    "let",
    "mut",
    "for",
    "in",
    "if",
    "else",
    "while",
    "loop",
    "match",
    "return",
    "as",
    "pub",
    "struct",
    "impl",
    "f32",
    "u32",
    "i32",
    "bool",
    "f64",
    "usize",
    "Tensor",
    "T",
    "B",
    "forward",
    "Linear",
    "Conv2d",
    "Relu",
    "Flatten",
    "MaxPool2d",
    "Dropout",
    "LayerNorm",
    "Embedding",
    "Map",
    "input",
    "output",
    "layer",
    "padding",
    "stride",
    "p",
    "exp",
    "max",
    "min",
    "clamp",
    "select",
    "barrier",
    "global_id",
    "local_id",
    "shared",
    "workgroup",
    "matmul",
    "softmax",
    "reshape",
    "transpose",
    "split",
    "cat",
    "narrow",
    "sum_dim",
    "causal_mask",
    "positions",
    "relu",
    "gelu",
    "PI",
    "true",
    "false",
    "_",
    "r#type",
];

const PUNCTS: &[char] =
    &['+', '-', '*', '/', '%', '<', '>', '=', '!', '&', '|', '^', ',', ';', ':', '.', '#', '?', '@'];

fn literal(rng: &mut Rng) -> Literal {
    match rng.below(14) {
        0 => Literal::u32_unsuffixed(0),
        1 => Literal::u32_unsuffixed(1),
        2 => Literal::u64_unsuffixed(4_294_967_296),
        3 => Literal::u64_unsuffixed(u64::MAX),
        4 => Literal::u128_unsuffixed(u128::MAX),
        5 => Literal::f64_unsuffixed(1e40),
        6 => Literal::f64_unsuffixed(0.0),
        7 => Literal::f64_unsuffixed(1.5),
        8 => Literal::string("s"),
        9 => Literal::character('c'),
        10 => Literal::u8_suffixed(255),
        11 => Literal::i64_suffixed(-7),
        12 => Literal::f32_suffixed(f32::MIN_POSITIVE),
        _ => Literal::usize_unsuffixed(rng.below(70_000)),
    }
}

fn random_tree(rng: &mut Rng, idents: &[String]) -> TokenTree {
    match rng.below(4) {
        0 => TokenTree::Literal(literal(rng)),
        1 => {
            let c = PUNCTS[rng.below(PUNCTS.len())];
            let spacing = if rng.below(2) == 0 { Spacing::Alone } else { Spacing::Joint };
            TokenTree::Punct(Punct::new(c, spacing))
        }
        2 if !idents.is_empty() => TokenTree::Ident(Ident::new(&idents[rng.below(idents.len())], Span::call_site())),
        _ => {
            let name = IDENTS[rng.below(IDENTS.len())];
            let ident = match name.strip_prefix("r#") {
                Some(raw) => Ident::new_raw(raw, Span::call_site()),
                None => Ident::new(name, Span::call_site()),
            };
            TokenTree::Ident(ident)
        }
    }
}

/// Every identifier in `ts`, so replacements are often plausible.
fn idents(ts: &TokenStream, out: &mut Vec<String>) {
    for t in ts.clone() {
        match t {
            TokenTree::Ident(i) => out.push(i.to_string()),
            TokenTree::Group(g) => idents(&g.stream(), out),
            _ => {}
        }
    }
}

/// Number of token trees in `ts`, nested ones included.
fn count(ts: &TokenStream) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => 1 + count(&g.stream()),
            _ => 1,
        })
        .sum()
}

/// `ts` with one mutation at tree number `*at` (counted depth first).
fn mutate_at(ts: TokenStream, at: &mut usize, rng: &mut Rng, vocab: &[String]) -> TokenStream {
    let mut trees: Vec<TokenTree> = ts.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        if *at == 0 {
            match rng.below(8) {
                0 => {
                    trees.remove(i);
                }
                1 => {
                    let t = trees[i].clone();
                    trees.insert(i, t);
                }
                2 if i + 1 < trees.len() => trees.swap(i, i + 1),
                3 | 4 => trees[i] = random_tree(rng, vocab),
                5 => trees.insert(i, random_tree(rng, vocab)),
                _ => match &trees[i] {
                    TokenTree::Group(g) => {
                        let d = [Delimiter::Parenthesis, Delimiter::Brace, Delimiter::Bracket, Delimiter::None];
                        match rng.below(3) {
                            0 => trees[i] = TokenTree::Group(Group::new(g.delimiter(), TokenStream::new())),
                            1 => {
                                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                                trees.splice(i..=i, inner);
                            }
                            _ => trees[i] = TokenTree::Group(Group::new(d[rng.below(4)], g.stream())),
                        }
                    }
                    _ => trees[i] = random_tree(rng, vocab),
                },
            }
            *at = usize::MAX;
            return trees.into_iter().collect();
        }
        *at -= 1;
        if let TokenTree::Group(g) = &trees[i] {
            let inner = mutate_at(g.stream(), at, rng, vocab);
            if *at == usize::MAX {
                let mut ng = Group::new(g.delimiter(), inner);
                ng.set_span(g.span());
                trees[i] = TokenTree::Group(ng);
                return trees.into_iter().collect();
            }
        }
        i += 1;
    }
    trees.into_iter().collect()
}

/// One to three mutations of `ts`.
fn mutate(ts: &TokenStream, rng: &mut Rng, vocab: &[String]) -> TokenStream {
    let mut out = ts.clone();
    for _ in 0..1 + rng.below(3) {
        let n = count(&out);
        let mut at = rng.below(n);
        out = mutate_at(out, &mut at, rng, vocab);
    }
    out
}

/// Runs `expand` on `cases` mutants of each seed; panics (listing the
/// inputs) if any expansion panicked.
fn fuzz(name: &str, seeds: &[TokenStream], cases: usize, expand: impl Fn(TokenStream) -> TokenStream) {
    let seed: u64 = std::env::var("BLAZE_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let cases = std::env::var("BLAZE_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(cases);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64 ^ seed.wrapping_mul(0x1000_0000_01b3));
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    let (mut code, mut errors) = (0, 0);
    for seed in seeds {
        let mut vocab = Vec::new();
        idents(seed, &mut vocab);
        // The seed itself must expand (without panicking) too.
        for case in 0..=cases {
            let input = if case == 0 { seed.clone() } else { mutate(seed, &mut rng, &vocab) };
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| expand(input.clone())));
            match &result {
                Ok(out) if out.to_string().contains("compile_error") => errors += 1,
                Ok(_) => code += 1,
                Err(_) => {}
            }
            if let Err(e) = result {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failures.push(format!("{msg}\n    input: {input}"));
            }
        }
    }
    std::panic::set_hook(hook);
    assert!(failures.is_empty(), "{name}: {} expansions panicked:\n{}", failures.len(), failures.join("\n"));
    // Mutants that still compile and mutants that do not: both paths ran.
    assert!(code > seeds.len() && errors > cases / 4, "{name}: {code} expansions gave code, {errors} errors");
    println!("{name}: {code} expansions gave code, {errors} compile errors, none panicked");
}

/// Mutants per seed.
const CASES: usize = 4000;

#[test]
fn model_structs_never_panic() {
    let seeds = [
        quote!([input = [1, 28, 28]] pub struct LeNet {
            #[layer(padding = 2)]
            conv1: Conv2d<1, 6, 5>,
            act1: Relu,
            pool1: MaxPool2d<2>,
            flat: Flatten,
            #[layer(p = 0.1)]
            drop: Dropout,
            fc: Linear<1176, 10>,
        }),
        quote!([input = [8]] struct Seq {
            emb: Embedding<100, 16>,
            norm: LayerNorm<16>,
            head: Linear<16, 4>,
            inner: Inner,
            act: Map<swish::Kernel>,
        }),
    ];
    fuzz("#[model]", &seeds, CASES, |ts| {
        let mut it = ts.into_iter();
        let attr = match it.next() {
            Some(TokenTree::Group(g)) => g.stream(),
            _ => TokenStream::new(),
        };
        crate::expand_model(attr, it.collect())
    });
}

#[test]
fn forward_bodies_never_panic() {
    let seeds = [
        quote!({ pub struct Block {
            norm: LayerNorm<16>,
            qkv: Linear<16, 48>,
            proj: Linear<16, 16>,
            fc: Linear<16, 64>,
            out: Linear<64, 16>,
            blocks: [Inner; 2],
        } } [input = [T, 16]] impl Block {
            fn forward(&self, x: Tensor) -> Tensor {
                let h = self.norm(x);
                let [q, k, v] = self.qkv(h).split(16, -1);
                let q = q.reshape([T, 4, 4]).transpose(0, 1);
                let k = k.reshape([T, 4, 4]).transpose(0, 1);
                let v = v.reshape([T, 4, 4]).transpose(0, 1);
                let att = q.matmul(k.transpose(-2, -1)).div(2.0).masked_fill(causal_mask(T), -1e9).softmax(-1);
                let x = x + self.proj(att.matmul(v).transpose(0, 1).reshape([T, 16]));
                let mut y = x + self.out(gelu(self.fc(x)));
                for b in &self.blocks {
                    y = b(y);
                }
                cat([y, x * 0.5], -1).narrow(-1, 0, 16).sum_dim(-1).mean_dim(0)
            }
        }),
        quote!({ pub struct Two { emb: Embedding<64, 8>, pos: Embedding<32, 8>, fc: Linear<8, 3> } }
        [input = ([T], [T, 8])] impl Two {
            fn forward(&self, ids: Tensor, extra: Tensor) -> Tensor {
                let h = self.emb(ids) + self.pos(positions(T)) - extra / 3.0;
                log_softmax(self.fc(relu(h)), -1).flatten(0, 1)
            }
        }),
    ];
    fuzz("forward bodies", &seeds, CASES, crate::graph::expand_graph);
}

#[test]
fn kernels_never_panic() {
    let seeds = [
        quote!(
            /// Soft clipping.
            pub fn soft(x: f32, t: f32) -> f32 {
                let m = max(x, 0.0);
                let y = if x > t { t } else { select(x < -t, -t, x) };
                m + log(1.0 + exp(-abs(x) / t)) * t + pow(y, 2.0) - clamp(x % 3.0, -1.0, 1.0) + PI
            }
        ),
        quote!(
            #[workgroup(64)]
            pub fn row_sum(input: &[f32], out: &mut [f32], cols: u32, shift: i32) {
                let row = workgroup_id();
                let lane = local_id();
                #[shared]
                let partial: [f32; 64];
                let mut acc = 0.0;
                let mut c = lane;
                while c < cols {
                    acc += input[row * cols + c];
                    c += 64;
                }
                partial[lane] = acc;
                barrier();
                let mut stride = 32;
                while stride > 0 {
                    if lane < stride {
                        partial[lane] += partial[lane + stride];
                    }
                    barrier();
                    stride = stride / 2;
                }
                let mut bits = (lane as i32 + shift) % 7;
                bits <<= 3;
                for k in 0..4 {
                    bits ^= (k as i32) >> 1;
                }
                if lane == 0 {
                    out[row] = partial[0] + (bits as f32) + (acc as u32 & 255) as f32;
                }
            }
        ),
    ];
    fuzz("kernel!", &seeds, CASES, blaze_kernel_dsl::expand);
}

#[test]
fn derive_module_never_panics() {
    let seeds = [quote!(
        #[derive(Module)]
        pub struct Net<B: Backend> {
            fc: Linear<B, 4, 8>,
            #[module(skip)]
            steps: usize,
            blocks: Vec<Linear<B, 8, 8>>,
            head: Option<Linear<B, 8, 2>>,
            scale: Tensor<B, 1>,
        }
    )];
    fuzz("#[derive(Module)]", &seeds, CASES, crate::module::expand);
}

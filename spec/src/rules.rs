//! The shape rules of tensor ops, written once. `#[model]` applies them to
//! a forward body's per-sample shapes while it expands, where a dim may be
//! known only by name (`T`, `64*T`); the runtime applies them to tensors'
//! shapes when an op runs. Both word a refusal through
//! [`RuleError::message`], so the compile error and the panic say the same.
//!
//! A rule is generic over the dim ([`Extent`]): `usize` at run time, the
//! macro's symbolic dim at compile time. A rule that gives a shape gives an
//! iterator over its operands' dims, which the runtime collects without
//! allocating.

/// A dim as a shape rule sees it.
pub trait Extent: Clone + PartialEq {
    /// The dim of size 1.
    fn one() -> Self;
    /// Its size, when it is known.
    fn fixed(&self) -> Option<usize>;
    /// The product of two dims.
    fn times(&self, other: &Self) -> Self;
    /// `self / other` when it divides exactly.
    fn over(&self, other: &Self) -> Option<Self>;

    /// Whether the dim is 1, and so broadcasts.
    fn is_one(&self) -> bool {
        self.fixed() == Some(1)
    }
}

impl Extent for usize {
    fn one() -> Self {
        1
    }

    fn fixed(&self) -> Option<usize> {
        Some(*self)
    }

    fn times(&self, other: &Self) -> Self {
        self.saturating_mul(*other)
    }

    fn over(&self, other: &Self) -> Option<Self> {
        (*other != 0 && self.is_multiple_of(*other)).then(|| self / other)
    }
}

/// Why a rule refused its operands. [`RuleError::message`] words it; the
/// shapes it names are the caller's to print, the dims it holds are shown
/// by the caller's function.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleError<D> {
    /// A dim argument outside `-rank..rank`.
    Dim {
        /// The argument.
        dim: i64,
        /// The operand's rank.
        rank: usize,
    },
    /// Two operands of different ranks where the op broadcasts.
    Ranks {
        /// The first operand's rank.
        a: usize,
        /// The second's.
        b: usize,
    },
    /// Dim `axis` of two operands differs and neither is 1.
    Broadcast {
        /// Which dim.
        axis: usize,
        /// The first operand's.
        a: D,
        /// The second's.
        b: D,
    },
    /// matmul of operands that are not both of one rank of at least 2.
    MatmulRank,
    /// matmul of operands whose inner dims differ.
    Inner {
        /// The first operand's last dim.
        a: D,
        /// The second's next-to-last.
        b: D,
    },
    /// A list of dims that is not a permutation of the operand's dims.
    Permutation {
        /// The list.
        axes: Vec<usize>,
        /// The operand's rank.
        rank: usize,
    },
    /// narrow with a negative start whose entries run past the end.
    PastEnd {
        /// Which dim.
        dim: usize,
        /// The start, from the end.
        start: i64,
        /// How many entries.
        len: usize,
    },
    /// narrow with a negative start before the dim's start.
    BeforeStart {
        /// Which dim.
        dim: usize,
        /// The start, from the end.
        start: i64,
    },
    /// narrow beyond the dim's size.
    Range {
        /// Which dim.
        dim: usize,
        /// The first entry.
        start: usize,
        /// One past the last.
        end: usize,
    },
    /// reshape to a shape of another number of elements.
    Elements {
        /// The operand's number of elements.
        have: D,
        /// The target's.
        want: D,
    },
    /// reshape with a `-1` that no whole dim fills.
    Infer,
    /// cat of an operand that differs from the first outside the dim.
    Cat {
        /// Which operand.
        index: usize,
        /// The dim joined along.
        dim: usize,
    },
}

impl<D> RuleError<D> {
    /// The refusal in words, as `op: ...`. `shapes` are the operands the
    /// op was given, printed (for reshape, the operand and the target);
    /// `show` prints a dim.
    pub fn message(&self, op: &str, shapes: &[&str], show: impl Fn(&D) -> String) -> String {
        let shape = |i: usize| shapes.get(i).copied().unwrap_or("?");
        let (x, y) = (shape(0), shape(1));
        match self {
            RuleError::Dim { dim, rank } => format!("{op}: dim {dim} is out of range for a tensor of rank {rank}"),
            RuleError::Ranks { a, b } => format!(
                "{op}: shapes {x} and {y} do not broadcast (ranks {a} and {b}; insert a dim of 1 to match ranks)"
            ),
            RuleError::Broadcast { axis, a, b } => {
                format!("{op}: shapes {x} and {y} do not broadcast (dim {axis}: {} vs {})", show(a), show(b))
            }
            RuleError::MatmulRank => format!("{op}: needs two operands of one rank >= 2, got {x} and {y}"),
            RuleError::Inner { a, b } => {
                format!("{op}: {x} times {y}: inner dims {} and {} differ", show(a), show(b))
            }
            RuleError::Permutation { axes, rank } => {
                format!("{op}: {axes:?} is not a permutation of the {rank} dims of {x}")
            }
            RuleError::PastEnd { dim, start, len } => {
                format!("{op}: {len} entries from {start} run past the end of dim {dim} of {x}")
            }
            RuleError::BeforeStart { dim, start } => {
                format!("{op}: {start} is before the start of dim {dim} of {x}")
            }
            RuleError::Range { dim, start, end } => {
                format!("{op}: {start}..{end} is out of range for dim {dim} of {x}")
            }
            RuleError::Elements { have, want } => {
                format!("{op}: {x} has {} elements, {y} has {}", show(have), show(want))
            }
            RuleError::Infer => format!("{op}: cannot infer the -1 in {y} from {x}"),
            RuleError::Cat { index, dim } => {
                format!("{op}: tensor {index} has shape {}, which does not match {x} outside dim {dim}", shape(*index))
            }
        }
    }
}

/// The dim a dim argument names in an operand of `rank` dims: `-1` is the
/// last, as in PyTorch.
pub fn dim<D>(dim: i64, rank: usize) -> Result<usize, RuleError<D>> {
    let r = rank as i64;
    match dim {
        d if (0..r).contains(&d) => Ok(d as usize),
        d if (-r..0).contains(&d) => Ok((d + r) as usize),
        _ => Err(RuleError::Dim { dim, rank }),
    }
}

/// The shape of an elementwise op on two operands of one rank: per dim,
/// both equal or one of them 1 (NumPy's rule, without rank promotion).
pub fn broadcast<'a, D: Extent>(a: &'a [D], b: &'a [D]) -> Result<impl Iterator<Item = &'a D>, RuleError<D>> {
    if a.len() != b.len() {
        return Err(RuleError::Ranks { a: a.len(), b: b.len() });
    }
    if let Some(axis) = a.iter().zip(b).position(|(p, q)| p != q && !p.is_one() && !q.is_one()) {
        return Err(RuleError::Broadcast { axis, a: a[axis].clone(), b: b[axis].clone() });
    }
    Ok(a.iter().zip(b).map(|(p, q)| if p.is_one() { q } else { p }))
}

/// The shape of `a.matmul(b)`: one rank of at least 2, inner dims equal,
/// the leading dims broadcast, as `torch.matmul` for operands of one rank.
pub fn matmul<'a, D: Extent>(a: &'a [D], b: &'a [D]) -> Result<impl Iterator<Item = &'a D>, RuleError<D>> {
    let r = a.len();
    if r < 2 || b.len() != r {
        return Err(RuleError::MatmulRank);
    }
    if a[r - 1] != b[r - 2] {
        return Err(RuleError::Inner { a: a[r - 1].clone(), b: b[r - 2].clone() });
    }
    let batch = broadcast(&a[..r - 2], &b[..r - 2])?;
    Ok(batch.chain([&a[r - 2], &b[r - 1]]))
}

/// Checks that `axes` reorders the `rank` dims of an operand.
pub fn permute<D>(axes: &[usize], rank: usize) -> Result<(), RuleError<D>> {
    let mut seen = [false; 64];
    let fits = axes.len() == rank
        && rank <= seen.len()
        && axes.iter().all(|&a| a < rank && !std::mem::replace(&mut seen[a], true));
    if fits { Ok(()) } else { Err(RuleError::Permutation { axes: axes.to_vec(), rank }) }
}

/// The first entry of `x.narrow(dim, start, len)` where dim `dim` is
/// `size`. A negative `start` counts from the end, as in `torch.narrow`; it
/// stays negative where the size is known only by name.
pub fn narrow<D: Extent>(size: &D, dim: usize, start: i64, len: usize) -> Result<i64, RuleError<D>> {
    let start = if start < 0 {
        let back = start.unsigned_abs() as usize;
        if len > back {
            return Err(RuleError::PastEnd { dim, start, len });
        }
        match size.fixed() {
            Some(n) if back > n => return Err(RuleError::BeforeStart { dim, start }),
            Some(n) => (n - back) as i64,
            None => return Ok(start),
        }
    } else {
        start
    };
    match size.fixed() {
        Some(n) if start as usize + len > n => {
            Err(RuleError::Range { dim, start: start as usize, end: start as usize + len })
        }
        _ => Ok(start),
    }
}

/// Checks `to` as a new shape for an operand of shape `from`, filling its
/// entry `infer` (a `-1`) with what the other dims leave.
pub fn reshape<D: Extent>(from: &[D], to: &mut [D], infer: Option<usize>) -> Result<(), RuleError<D>> {
    let product = |s: &[D]| s.iter().fold(D::one(), |p, d| p.times(d));
    let have = product(from);
    match infer {
        Some(at) => {
            to[at] = D::one();
            to[at] = have.over(&product(to)).ok_or(RuleError::Infer)?;
            Ok(())
        }
        None => {
            let want = product(to);
            if have == want { Ok(()) } else { Err(RuleError::Elements { have, want }) }
        }
    }
}

/// Checks that operands joined along `dim` agree everywhere else.
pub fn cat<'a, D: Extent + 'a>(shapes: impl IntoIterator<Item = &'a [D]>, dim: usize) -> Result<(), RuleError<D>> {
    let mut shapes = shapes.into_iter();
    let Some(first) = shapes.next() else { return Ok(()) };
    for (i, s) in shapes.enumerate() {
        let fits = s.len() == first.len() && s.iter().zip(first).enumerate().all(|(j, (p, q))| j == dim || p == q);
        if !fits {
            return Err(RuleError::Cat { index: i + 1, dim });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape<'a>(it: impl Iterator<Item = &'a usize>) -> Vec<usize> {
        it.copied().collect()
    }

    fn say(e: RuleError<usize>, op: &str, shapes: &[&str]) -> String {
        e.message(op, shapes, usize::to_string)
    }

    #[test]
    fn broadcasting_follows_numpy_at_one_rank() {
        assert_eq!(shape(broadcast(&[2, 1, 4], &[1, 3, 4]).unwrap()), [2, 3, 4]);
        assert_eq!(shape(broadcast::<usize>(&[], &[]).unwrap()), Vec::<usize>::new());
        let e = broadcast(&[2, 3], &[4, 3]).err().unwrap();
        assert_eq!(
            say(e, "add", &["[2, 3]", "[4, 3]"]),
            "add: shapes [2, 3] and [4, 3] do not broadcast (dim 0: 2 vs 4)"
        );
        assert_eq!(broadcast(&[2, 3], &[3]).err(), Some(RuleError::Ranks { a: 2, b: 1 }));
    }

    #[test]
    fn matmul_contracts_the_inner_dims_and_broadcasts_the_rest() {
        assert_eq!(shape(matmul(&[5, 1, 2, 3], &[1, 4, 3, 6]).unwrap()), [5, 4, 2, 6]);
        assert_eq!(matmul(&[2, 3], &[4, 6]).err(), Some(RuleError::Inner { a: 3, b: 4 }));
        assert_eq!(matmul(&[3], &[3]).err(), Some(RuleError::MatmulRank));
        assert_eq!(matmul(&[2, 2, 3], &[3, 3, 4]).err(), Some(RuleError::Broadcast { axis: 0, a: 2, b: 3 }));
    }

    #[test]
    fn dims_count_from_the_end_when_negative() {
        assert_eq!(dim::<usize>(-1, 3), Ok(2));
        assert_eq!(dim::<usize>(2, 3), Ok(2));
        assert_eq!(dim::<usize>(3, 3), Err(RuleError::Dim { dim: 3, rank: 3 }));
        assert_eq!(dim::<usize>(-4, 3), Err(RuleError::Dim { dim: -4, rank: 3 }));
        assert_eq!(
            say(RuleError::Dim { dim: 3, rank: 3 }, "sum_dim", &[]),
            "sum_dim: dim 3 is out of range for a tensor of rank 3"
        );
    }

    #[test]
    fn permutations_name_each_dim_once() {
        assert_eq!(permute::<usize>(&[2, 0, 1], 3), Ok(()));
        assert!(permute::<usize>(&[0, 0, 1], 3).is_err());
        assert!(permute::<usize>(&[0, 1], 3).is_err());
        assert!(permute::<usize>(&[0, 3, 1], 3).is_err());
    }

    #[test]
    fn narrow_counts_a_negative_start_from_the_end() {
        assert_eq!(narrow(&5, 0, -2, 2), Ok(3));
        assert_eq!(narrow(&5, 0, 1, 4), Ok(1));
        assert_eq!(narrow(&5, 1, 2, 4), Err(RuleError::Range { dim: 1, start: 2, end: 6 }));
        assert_eq!(narrow(&5, 0, -1, 2), Err(RuleError::PastEnd { dim: 0, start: -1, len: 2 }));
        assert_eq!(narrow(&3, 0, -4, 1), Err(RuleError::BeforeStart { dim: 0, start: -4 }));
    }

    #[test]
    fn reshape_keeps_the_elements_and_infers_one_dim() {
        let mut to = [2, 0, 3];
        assert_eq!(reshape(&[4, 3, 2], &mut to, Some(1)), Ok(()));
        assert_eq!(to, [2, 4, 3]);
        assert_eq!(reshape(&[4, 3], &mut [5, 0], Some(1)), Err(RuleError::Infer));
        assert_eq!(reshape(&[4, 3], &mut [0, 0], Some(1)), Err(RuleError::Infer));
        assert_eq!(reshape(&[4, 3], &mut [6, 3], None), Err(RuleError::Elements { have: 12, want: 18 }));
    }

    #[test]
    fn cat_needs_agreement_outside_its_dim() {
        let (a, b, c): (&[usize], &[usize], &[usize]) = (&[2, 3], &[2, 5], &[3, 5]);
        assert_eq!(cat([a, b], 1), Ok(()));
        assert_eq!(cat([a, b, c], 1), Err(RuleError::Cat { index: 2, dim: 1 }));
        assert_eq!(cat([a, &[2, 3, 1][..]], 0), Err(RuleError::Cat { index: 1, dim: 0 }));
    }
}

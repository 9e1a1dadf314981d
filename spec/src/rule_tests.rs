//! The layer rules against PyTorch's shapes, and their refusals: the
//! spec's `output` over `shape.rs`'s windows and symbols.

use crate::shape::*;
use crate::{Layer, Options, output, output_rank};

#[test]
fn max_pooling_rounds_up_in_ceil_mode() {
    // SqueezeNet's 3x3 stride-2 pooling of 14 and 8: 7 and 4 windows,
    // not 6 and 3; a last window starting in the right padding is dropped.
    assert_eq!(pool_window(14, 3, 2, 0, true), Some(7));
    assert_eq!(pool_window(14, 3, 2, 0, false), Some(6));
    assert_eq!(pool_window(8, 3, 2, 0, true), Some(4));
    assert_eq!(pool_window(5, 2, 2, 1, true), Some(3));
    assert_eq!(pool_window(2, 3, 1, 0, true), None);
    let ceil = Options { ceil_mode: true, stride: Some(2), ..Options::DEFAULT };
    assert_eq!(out(Layer::MaxPool2d, &[3], ceil, &[4, 14, 8]), Ok(vec![4, 7, 4]));
}

fn out(layer: Layer, g: &[usize], o: Options, dims: &[usize]) -> Result<Vec<usize>, ShapeError> {
    output(layer, g, &o, StaticShape::new(dims)).map(|s| s.as_slice().to_vec())
}

const T: usize = symbol(0);

#[test]
fn rules_give_pytorchs_shapes() {
    let d = Options::default();
    assert_eq!(out(Layer::Linear, &[400, 120], d, &[400]), Ok(vec![120]));
    assert_eq!(out(Layer::Linear, &[16, 8], d, &[T, 16]), Ok(vec![T, 8]), "a named dim passes");
    let pad2 = Options { padding: 2, ..d };
    assert_eq!(out(Layer::Conv2d, &[1, 6, 5], pad2, &[1, 28, 28]), Ok(vec![6, 28, 28]));
    let strided = Options { stride: Some(2), padding: 1, dilation: 2, ..d };
    assert_eq!(out(Layer::Conv2d, &[3, 8, 3], strided, &[3, 7, 7]), Ok(vec![8, 3, 3]));
    assert_eq!(out(Layer::MaxPool2d, &[2], d, &[6, 28, 28]), Ok(vec![6, 14, 14]));
    assert_eq!(
        out(Layer::AvgPool2d, &[3], Options { stride: Some(2), padding: 1, ..d }, &[2, 7, 7]),
        Ok(vec![2, 4, 4])
    );
    assert_eq!(out(Layer::GlobalAvgPool, &[], d, &[16, 5, 5]), Ok(vec![16]));
    assert_eq!(out(Layer::Flatten, &[], d, &[16, 5, 5]), Ok(vec![400]));
    assert_eq!(out(Layer::Embedding, &[100, 8], d, &[T]), Ok(vec![T, 8]));
    assert_eq!(out(Layer::Embedding, &[100, 8], d, &[]), Ok(vec![8]));
    assert_eq!(out(Layer::from_name("Relu").expect("a layer"), &[], d, &[T, 3, 9]), Ok(vec![T, 3, 9]));
    assert_eq!(out(Layer::LayerNorm, &[16], d, &[T, 16]), Ok(vec![T, 16]));
}

#[test]
fn refusals_name_the_numbers() {
    let d = Options::default();
    let fc = |dims: &[usize]| out(Layer::Linear, &[400, 120], d, dims).expect_err("refused");
    let msg = |e: ShapeError, dims: &[usize], got: &str, from| {
        e.message("`fc1: Linear<400, 120>`", &StaticShape::new(dims), got, from, "fc1")
    };
    let long = ShapeError::KernelLength { k: 5, dilation: 1, padding: 0, len: 3 };
    assert_eq!(
        long.message("`conv: Conv1d<2, 4, 5>`", &StaticShape::new(&[2, 3]), "[2, 3]", None, "conv"),
        "`conv: Conv1d<2, 4, 5>`: the kernel of 5 (dilation 1) is longer than the input of 3 (padding 0)"
    );
    assert_eq!(
        ShapeError::Dim { dim: 3 }.message("`sm: Softmax`", &StaticShape::new(&[4, 5]), "[4, 5]", None, "sm"),
        "`sm: Softmax` has `dim = 3`, got [4, 5]: a batch of those takes dim 1 to 2 or -2 to -1 (0 is the batch)"
    );
    let rank = ShapeError::Rank { expected: "[C] or [C, L]" };
    assert_eq!(
        rank.message("`bn: BatchNorm1d<4>`", &StaticShape::new(&[4, 5, 5]), "[4, 5, 5]", Some("`conv`"), "bn"),
        "`bn: BatchNorm1d<4>` expects a per-sample shape [C] or [C, L], but `conv` produces [4, 5, 5]"
    );
    assert_eq!(
        msg(fc(&[16, 5, 5]), &[16, 5, 5], "[16, 5, 5]", Some("`pool2`")),
        "`fc1: Linear<400, 120>` expects 400 input features, but `pool2` produces [16, 5, 5]; add a `Flatten` \
         layer before `fc1` to get [400]"
    );
    assert_eq!(
        msg(fc(&[256]), &[256], "[256]", Some("`flat`")),
        "`fc1: Linear<400, 120>` expects 400 input features, but `flat` produces [256]"
    );
    assert_eq!(
        msg(fc(&[T, 32]), &[T, 32], "[T, 32]", None),
        "`fc1: Linear<400, 120>` expects 400 input features, got [T, 32]"
    );
    assert_eq!(
        out(Layer::Conv2d, &[8, 16, 5], d, &[6, 28, 28]),
        Err(ShapeError::InputChannels { expected: 8, got: 6 })
    );
    assert_eq!(
        out(Layer::Conv2d, &[4, 6, 3], Options { groups: 4, ..d }, &[4, 9, 9]),
        Err(ShapeError::Groups { groups: 4, cin: 4, cout: 6 })
    );
    assert_eq!(
        out(Layer::Conv2d, &[4, 4, 5], d, &[4, 3, 3]),
        Err(ShapeError::Kernel { k: 5, dilation: 1, padding: 0, h: 3, w: 3 })
    );
    assert_eq!(
        out(Layer::MaxPool2d, &[2], Options { padding: 2, ..d }, &[1, 8, 8]),
        Err(ShapeError::Padding { padding: 2, k: 2 })
    );
    assert_eq!(out(Layer::Conv2d, &[1, 4, 3], d, &[1, T, 8]), Err(ShapeError::NotFixed));
    assert_eq!(out(Layer::Flatten, &[], d, &[T, 4]), Err(ShapeError::NotFixed));
    assert_eq!(out(Layer::Flatten, &[], d, &[MAX_SIZE, 4]), Err(ShapeError::TooLarge));
    assert_eq!(out(Layer::Conv2d, &[1, 4, 3], d, &[8, 8]), Err(ShapeError::NotImage));
    assert_eq!(out(Layer::Embedding, &[10, 4], d, &[3, 3]), Err(ShapeError::Ids));
    assert_eq!(out(Layer::LayerNorm, &[16], d, &[8]), Err(ShapeError::LastDim { expected: 16 }));
    assert_eq!(out(Layer::Linear, &[4, 2], d, &[]), Err(ShapeError::NoFeatureDim));
    // Overflowing options are refusals, not panics.
    let huge = Options { padding: usize::MAX, dilation: usize::MAX, ..d };
    assert!(out(Layer::Conv2d, &[1, 1, 3], huge, &[1, 8, 8]).is_err());
}

/// `output_rank` agrees with every shape `output` accepts, over a sweep
/// of sizes, options and inputs of rank 0 to 4.
#[test]
fn output_rank_is_the_rules_rank() {
    let options = [
        Options::default(),
        Options { padding: 1, ..Options::default() },
        Options { stride: Some(2), dilation: 2, ..Options::default() },
    ];
    let sizes = [1, 2, 3, 4, 8, T];
    let mut accepted = [0usize; Layer::ALL.len()];
    for (l, &layer) in Layer::ALL.iter().enumerate() {
        let generics: Vec<Vec<usize>> = match layer.generics().len() {
            0 => vec![vec![]],
            1 => [1, 2, 3, 4].iter().map(|&a| vec![a]).collect(),
            2 => [[2, 3], [4, 8], [8, 4]].iter().map(|g| g.to_vec()).collect(),
            _ => [[1, 2, 3], [2, 4, 1], [4, 4, 2]].iter().map(|g| g.to_vec()).collect(),
        };
        for g in &generics {
            for o in &options {
                for rank in 0..=4usize {
                    for n in 0..sizes.len().pow(rank as u32) {
                        let dims: Vec<usize> =
                            (0..rank).map(|i| sizes[n / sizes.len().pow(i as u32) % sizes.len()]).collect();
                        if let Ok(shape) = output(layer, g, o, StaticShape::new(&dims)) {
                            assert_eq!(shape.rank, output_rank(layer, rank), "{layer:?}{g:?} on {dims:?}");
                            accepted[l] += 1;
                        }
                    }
                }
            }
        }
    }
    for (layer, n) in Layer::ALL.iter().zip(accepted) {
        assert!(n > 0, "the sweep never reaches an input {layer:?} accepts");
    }
}

#[test]
fn rules_run_in_const_evaluation() {
    const S: StaticShape = match output(Layer::Linear, &[4, 2], &Options::DEFAULT, StaticShape::new(&[3, 4])) {
        Ok(s) => s,
        Err(_) => panic!("refused"),
    };
    assert_eq!(S.as_slice(), [3, 2]);
}

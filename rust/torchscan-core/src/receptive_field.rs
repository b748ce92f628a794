//! Receptive-field algebra: how a layer's window grows the field a position of its output sees.
//!
//! A field describes, per spatial dimension, how many input positions one output position sees
//! (`size`), how far apart in the input two neighbouring output positions are (`stride`, the
//! "jump") and how many positions of padding lie before the first input position it sees
//! (`padding`). A model input has the field of a single position. A window of kernel `k`,
//! stride `s`, padding `q` and dilation `d` turns field `(r, j, p)` into
//! `(r + (k - 1) d j, j s, p + q j)` (Araujo, Norris and Sim, "Computing Receptive Fields of
//! Convolutional Neural Networks", Distill 2019). Elementwise operators combine their inputs'
//! fields: the widest size and padding, on a grid they must share.
//!
//! The compiled crawl path (`torchscan-crawl`) carries these fields along an analysed forward;
//! the algebra itself lives here, tested without Python.

/// Receptive field size, effective stride and leading padding, one entry per spatial dimension.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Input positions one output position sees.
    pub size: Vec<f64>,
    /// Distance in the input between two neighbouring output positions.
    pub stride: Vec<f64>,
    /// Padding positions before the first input position it sees.
    pub padding: Vec<f64>,
}

/// One window, per spatial dimension: what a convolution or a pooling layer applies.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Kernel size.
    pub kernel: Vec<f64>,
    /// Stride of the window.
    pub stride: Vec<f64>,
    /// Padding before the first position.
    pub padding: Vec<f64>,
    /// Dilation of the kernel.
    pub dilation: Vec<f64>,
}

impl Step {
    /// Whether the step leaves positions where they are (kernel 1, stride 1, no padding, no
    /// dilation): activations, normalisation.
    pub fn is_identity(&self) -> bool {
        self.kernel.iter().all(|&k| k == 1.0)
            && self.stride.iter().all(|&s| s == 1.0)
            && self.padding.iter().all(|&q| q == 0.0)
            && self.dilation.iter().all(|&d| d == 1.0)
    }

    /// Whether every part has `dims` entries.
    pub fn has_dims(&self, dims: usize) -> bool {
        self.kernel.len() == dims
            && self.stride.len() == dims
            && self.padding.len() == dims
            && self.dilation.len() == dims
    }
}

impl Field {
    /// The field of one position of a model input with `dims` spatial dimensions.
    pub fn position(dims: usize) -> Self {
        Self {
            size: vec![1.0; dims],
            stride: vec![1.0; dims],
            padding: vec![0.0; dims],
        }
    }

    /// Number of spatial dimensions.
    pub fn dims(&self) -> usize {
        self.size.len()
    }

    /// The field after `step`, which must have [`Field::dims`] entries in each part
    /// ([`Step::has_dims`]); `None` when it does not.
    pub fn through(&self, step: &Step) -> Option<Self> {
        let dims = self.dims();
        if !step.has_dims(dims) {
            return None;
        }
        let mut next = Self {
            size: Vec::with_capacity(dims),
            stride: Vec::with_capacity(dims),
            padding: Vec::with_capacity(dims),
        };
        for dim in 0..dims {
            let (r, j, p) = (self.size[dim], self.stride[dim], self.padding[dim]);
            let (k, s, q, d) = (
                step.kernel[dim],
                step.stride[dim],
                step.padding[dim],
                step.dilation[dim],
            );
            next.size.push(r + (k - 1.0) * d * j);
            next.stride.push(j * s);
            next.padding.push(p + q * j);
        }
        Some(next)
    }

    /// The field of an elementwise result of inputs with `fields`: the widest size and padding
    /// in each dimension. `None` when there is no field or when they do not share a grid
    /// (different dimensions or strides): no field describes such a result.
    pub fn union<'a>(fields: impl IntoIterator<Item = &'a Field>) -> Option<Self> {
        let mut fields = fields.into_iter();
        let mut merged = fields.next()?.clone();
        for field in fields {
            if field.dims() != merged.dims() || field.stride != merged.stride {
                return None;
            }
            for dim in 0..merged.dims() {
                merged.size[dim] = merged.size[dim].max(field.size[dim]);
                merged.padding[dim] = merged.padding[dim].max(field.padding[dim]);
            }
        }
        Some(merged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn step(k: f64, s: f64, q: f64, d: f64) -> Step {
        Step {
            kernel: vec![k; 2],
            stride: vec![s; 2],
            padding: vec![q; 2],
            dilation: vec![d; 2],
        }
    }

    #[test]
    fn a_resnet_stem_sees_eleven_positions() {
        // conv 7x7 stride 2 padding 3, then max pool 3x3 stride 2 padding 1.
        let conv = Field::position(2).through(&step(7.0, 2.0, 3.0, 1.0));
        let pooled = conv
            .as_ref()
            .and_then(|f| f.through(&step(3.0, 2.0, 1.0, 1.0)));
        assert_eq!(
            conv,
            Some(Field {
                size: vec![7.0; 2],
                stride: vec![2.0; 2],
                padding: vec![3.0; 2],
            })
        );
        assert_eq!(
            pooled,
            Some(Field {
                size: vec![11.0; 2],
                stride: vec![4.0; 2],
                padding: vec![5.0; 2],
            })
        );
    }

    #[test]
    fn dilation_spreads_the_kernel() {
        // A 3x3 kernel with dilation 2 covers 5 positions.
        let field = Field::position(2).through(&step(3.0, 1.0, 2.0, 2.0));
        assert_eq!(field.map(|f| f.size), Some(vec![5.0; 2]));
    }

    #[test]
    fn a_step_of_other_dimensions_gives_no_field() {
        let one_d = Step {
            kernel: vec![3.0],
            stride: vec![1.0],
            padding: vec![1.0],
            dilation: vec![1.0],
        };
        assert_eq!(Field::position(2).through(&one_d), None);
        assert!(!one_d.has_dims(2));
    }

    #[test]
    fn union_takes_the_widest_on_a_shared_grid() {
        let wide = Field {
            size: vec![5.0, 3.0],
            stride: vec![2.0, 2.0],
            padding: vec![1.0, 2.0],
        };
        let narrow = Field {
            size: vec![3.0, 7.0],
            stride: vec![2.0, 2.0],
            padding: vec![0.0, 3.0],
        };
        let merged = Field::union([&wide, &narrow]);
        assert_eq!(
            merged,
            Some(Field {
                size: vec![5.0, 7.0],
                stride: vec![2.0, 2.0],
                padding: vec![1.0, 3.0],
            })
        );
        let other_grid = Field::position(2);
        assert_eq!(Field::union([&wide, &other_grid]), None);
        assert_eq!(Field::union([&wide, &Field::position(3)]), None);
        assert_eq!(Field::union(std::iter::empty()), None);
    }

    fn small() -> impl Strategy<Value = f64> {
        (1u8..8).prop_map(f64::from)
    }

    fn steps() -> impl Strategy<Value = Vec<Step>> {
        prop::collection::vec(
            (small(), small(), (0u8..4).prop_map(f64::from), small())
                .prop_map(|(k, s, q, d)| step(k, s, q, d)),
            0..6,
        )
    }

    proptest! {
        #[test]
        fn identity_steps_change_nothing(
            chain in steps(),
        ) {
            let mut field = Field::position(2);
            for each in &chain {
                field = field.through(each).unwrap_or_else(|| Field::position(0));
            }
            prop_assert_eq!(field.through(&step(1.0, 1.0, 0.0, 1.0)), Some(field.clone()));
        }

        #[test]
        fn fields_grow_and_strides_multiply(chain in steps()) {
            let mut field = Field::position(2);
            let mut stride = 1.0;
            for each in &chain {
                let next = field.through(each);
                prop_assert!(next.is_some());
                let next = next.unwrap_or_else(|| Field::position(2));
                prop_assert!(next.size[0] >= field.size[0]);
                prop_assert!(next.padding[0] >= field.padding[0]);
                stride *= each.stride[0];
                field = next;
            }
            prop_assert_eq!(field.stride[0], stride);
        }

        #[test]
        fn two_stride_one_steps_add_their_spans(k1 in small(), k2 in small(), d in small()) {
            // Stride 1: the spans (k - 1) d add up, as one kernel of their sum would.
            let two = Field::position(2)
                .through(&step(k1, 1.0, 0.0, d))
                .and_then(|f| f.through(&step(k2, 1.0, 0.0, d)));
            let one = Field::position(2).through(&step(k1 + k2 - 1.0, 1.0, 0.0, d));
            prop_assert_eq!(two, one);
        }

        #[test]
        fn union_is_idempotent_and_commutative(a in steps(), b in steps()) {
            let walk = |chain: &[Step]| {
                chain.iter().fold(Field::position(2), |field, each| {
                    field.through(each).unwrap_or_else(|| Field::position(2))
                })
            };
            let (left, right) = (walk(&a), walk(&b));
            prop_assert_eq!(Field::union([&left, &left]), Some(left.clone()));
            prop_assert_eq!(Field::union([&left, &right]), Field::union([&right, &left]));
        }
    }
}

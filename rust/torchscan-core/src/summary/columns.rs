//! The columns of the analysis table, chosen by name as torchinfo's `col_names` chooses them.

use std::fmt;

/// A column of the analysis table after the layer name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// The shapes of the call's positional and keyword arguments (`input_size`).
    InputSize,
    /// The shape of the call's output (`output_size`).
    OutputSize,
    /// The module's parameters (`num_params`, `parameters`).
    Parameters,
    /// The parameters' share of the model's, in percent (`params_percent`, `parameter_share`).
    ParameterShare,
    /// The kernel size of a convolution or pooling layer (`kernel_size`).
    KernelSize,
    /// The module's FLOP estimate for the call (`module_flops`).
    ModuleFlops,
    /// The module's multiply-accumulate estimate for the call (`mult_adds`, `macs`).
    Macs,
    /// Operator FLOPs run inside the module over all its calls (`operator_flops`).
    OperatorFlops,
    /// The receptive field at the call's output (`receptive_field`).
    ReceptiveField,
    /// The effective stride at the call's output (`effective_stride`).
    EffectiveStride,
    /// The effective padding at the call's output (`effective_padding`).
    EffectivePadding,
    /// The module's trainable parameters (`trainable`).
    Trainable,
}

/// Every accepted name with its column: torchinfo's `col_names` and torchscan's own names.
pub const COLUMN_NAMES: [(&str, Column); 15] = [
    ("input_size", Column::InputSize),
    ("output_size", Column::OutputSize),
    ("num_params", Column::Parameters),
    ("parameters", Column::Parameters),
    ("params_percent", Column::ParameterShare),
    ("parameter_share", Column::ParameterShare),
    ("kernel_size", Column::KernelSize),
    ("module_flops", Column::ModuleFlops),
    ("mult_adds", Column::Macs),
    ("macs", Column::Macs),
    ("operator_flops", Column::OperatorFlops),
    ("receptive_field", Column::ReceptiveField),
    ("effective_stride", Column::EffectiveStride),
    ("effective_padding", Column::EffectivePadding),
    ("trainable", Column::Trainable),
];

/// The columns of the table when none are chosen: output shape, parameters, trainable
/// parameters, module FLOPs and MACs.
pub const DEFAULT_COLUMNS: [Column; 5] = [
    Column::OutputSize,
    Column::Parameters,
    Column::Trainable,
    Column::ModuleFlops,
    Column::Macs,
];

/// Column names that choose no table: a name that is not one of [`COLUMN_NAMES`], or one that
/// names a column an earlier name already chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownColumn {
    /// The name is not one of [`COLUMN_NAMES`].
    Unknown(String),
    /// The name chooses the same column as the earlier name (a repeat or an alias).
    Repeated {
        /// The later name.
        name: String,
        /// The earlier name of the same column.
        earlier: String,
    },
}

impl fmt::Display for UnknownColumn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownColumn::Unknown(name) => {
                let names: Vec<&str> = COLUMN_NAMES.iter().map(|(name, _)| *name).collect();
                write!(
                    f,
                    "unknown column '{name}'; the columns are {}",
                    names.join(", ")
                )
            }
            UnknownColumn::Repeated { name, earlier } if name == earlier => {
                write!(f, "column '{name}' is named twice; name each column once")
            }
            UnknownColumn::Repeated { name, earlier } => write!(
                f,
                "column '{name}' is the column '{earlier}' already chose; name each column once"
            ),
        }
    }
}

impl std::error::Error for UnknownColumn {}

impl Column {
    /// The column of a name of [`COLUMN_NAMES`].
    pub fn from_name(name: &str) -> Result<Column, UnknownColumn> {
        COLUMN_NAMES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, column)| *column)
            .ok_or_else(|| UnknownColumn::Unknown(name.to_owned()))
    }

    /// The columns of `names` in their order; a name that chooses a column an earlier one
    /// already chose (a repeat, or an alias such as `num_params` and `parameters`) is an error.
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<Vec<Column>, UnknownColumn> {
        let mut columns: Vec<(Column, &str)> = Vec::with_capacity(names.len());
        for name in names {
            let column = Column::from_name(name.as_ref())?;
            if let Some((_, earlier)) = columns.iter().find(|(chosen, _)| *chosen == column) {
                return Err(UnknownColumn::Repeated {
                    name: name.as_ref().to_owned(),
                    earlier: (*earlier).to_owned(),
                });
            }
            columns.push((column, name.as_ref()));
        }
        Ok(columns.into_iter().map(|(column, _)| column).collect())
    }

    /// The column's header in the text table.
    pub fn header(self) -> &'static str {
        match self {
            Column::InputSize => "Input shape",
            Column::OutputSize => "Output shape",
            Column::Parameters => "Params",
            Column::ParameterShare => "Params %",
            Column::KernelSize => "Kernel",
            Column::ModuleFlops => "FLOPs",
            Column::Macs => "MACs",
            Column::OperatorFlops => "Op FLOPs",
            Column::ReceptiveField => "Receptive field",
            Column::EffectiveStride => "Eff. stride",
            Column::EffectivePadding => "Eff. padding",
            Column::Trainable => "Trainable",
        }
    }

    /// Whether the column's cells are text aligned left (shapes) rather than numbers aligned
    /// right.
    pub fn is_text(self) -> bool {
        matches!(self, Column::InputSize | Column::OutputSize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_torchinfo_and_torchscan() {
        assert_eq!(Column::from_name("num_params"), Ok(Column::Parameters));
        assert_eq!(Column::from_name("mult_adds"), Ok(Column::Macs));
        assert_eq!(Column::from_name("macs"), Ok(Column::Macs));
        let error = Column::from_name("flops").expect_err("unknown");
        assert!(
            error
                .to_string()
                .starts_with("unknown column 'flops'; the columns are input_size, output_size,")
        );
        assert_eq!(
            Column::from_names(&["output_size", "num_params", "macs"]),
            Ok(vec![Column::OutputSize, Column::Parameters, Column::Macs])
        );
        assert_eq!(
            Column::from_names(&["num_params", "parameters"])
                .expect_err("an alias")
                .to_string(),
            "column 'parameters' is the column 'num_params' already chose; name each column once"
        );
        assert_eq!(
            Column::from_names(&["macs", "macs"])
                .expect_err("a repeat")
                .to_string(),
            "column 'macs' is named twice; name each column once"
        );
        for (name, column) in COLUMN_NAMES {
            assert_eq!(Column::from_name(name), Ok(column));
            assert!(!column.header().is_empty());
        }
    }
}

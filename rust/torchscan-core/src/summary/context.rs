//! Two contexts side by side, row by row, for the pages and summaries of comparisons and diffs.

use crate::format::NOT_RECORDED;
use crate::schema::common::{Context, dtypes_text};

/// One setting of two contexts: its label, each side's value as text, and whether they differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContextRow {
    /// The setting, for people (`Threads`, `dtypes`, `OMP_NUM_THREADS`).
    pub label: String,
    /// The first side's value (the baseline, or the analysis before).
    pub left: String,
    /// The second side's value (the candidate, or the analysis after).
    pub right: String,
    /// Whether the two values differ (a setting one side does not record differs too).
    pub differs: bool,
}

fn flag(value: Option<bool>) -> Option<String> {
    value.map(|v| v.to_string())
}

fn joined(values: &[String], text: impl Fn(&[String]) -> String) -> Option<String> {
    (!values.is_empty()).then(|| text(values))
}

/// Every setting that at least one of the two contexts records, in a fixed order; a setting
/// neither records is left out, one recorded on one side only shows [`NOT_RECORDED`] on the
/// other and differs.
pub(crate) fn context_rows(left: &Context, right: &Context) -> Vec<ContextRow> {
    let fields = |c: &Context| -> Vec<(String, Option<String>)> {
        let mut fields = vec![
            ("torchscan".to_owned(), Some(c.torchscan_version.clone())),
            ("torch".to_owned(), c.torch_version.clone()),
            ("Python".to_owned(), c.python_version.clone()),
            ("Platform".to_owned(), c.platform.clone()),
            ("CPU".to_owned(), c.cpu_model.clone()),
            ("Device".to_owned(), c.device.clone()),
            ("Device name".to_owned(), c.device_name.clone()),
            ("Threads".to_owned(), c.torch_threads.map(|t| t.to_string())),
            (
                "Interop threads".to_owned(),
                c.torch_interop_threads.map(|t| t.to_string()),
            ),
        ];
        let mut names: Vec<&String> = left.thread_env.keys().collect();
        names.extend(right.thread_env.keys());
        names.sort();
        names.dedup();
        for name in names {
            let value = c
                .thread_env
                .get(name)
                .cloned()
                .unwrap_or_else(|| "not set".to_owned());
            fields.push((name.clone(), Some(value)));
        }
        let f = &c.flags;
        fields.extend([
            (
                "dtypes".to_owned(),
                joined(&c.dtypes, |d| dtypes_text(d, ", ")),
            ),
            ("Grad enabled".to_owned(), flag(f.grad_enabled)),
            ("Inference mode".to_owned(), flag(f.inference_mode)),
            ("TF32 matmul".to_owned(), flag(f.tf32_matmul)),
            ("TF32 cuDNN".to_owned(), flag(f.tf32_cudnn)),
            ("cuDNN benchmark".to_owned(), flag(f.cudnn_benchmark)),
            (
                "cuDNN deterministic".to_owned(),
                flag(f.cudnn_deterministic),
            ),
            (
                "float32 matmul precision".to_owned(),
                f.float32_matmul_precision.clone(),
            ),
            (
                "Deterministic algorithms".to_owned(),
                flag(f.deterministic_algorithms),
            ),
            ("Autocast".to_owned(), f.autocast_text()),
            ("Model".to_owned(), c.model_type.clone()),
            ("Training before".to_owned(), flag(c.training_before)),
            ("Execution mode".to_owned(), c.execution_mode.clone()),
            ("Devices".to_owned(), joined(&c.devices, |d| d.join(", "))),
        ]);
        fields
    };
    fields(left)
        .into_iter()
        .zip(fields(right))
        .filter_map(|((label, l), (_, r))| {
            if l.is_none() && r.is_none() {
                return None;
            }
            let differs = l != r;
            let text = |v: Option<String>| v.unwrap_or_else(|| NOT_RECORDED.to_owned());
            Some(ContextRow {
                label,
                left: text(l),
                right: text(r),
                differs,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_mark_what_differs_and_leave_out_what_neither_records() {
        let mut left = Context {
            torchscan_version: "0.3.0".to_owned(),
            torch_threads: Some(1),
            dtypes: vec!["torch.float32".to_owned()],
            ..Context::default()
        };
        left.thread_env
            .insert("OMP_NUM_THREADS".to_owned(), "1".to_owned());
        let right = Context {
            torchscan_version: "0.3.0".to_owned(),
            torch_threads: Some(4),
            device: Some("cpu".to_owned()),
            dtypes: vec!["torch.bfloat16".to_owned()],
            ..Context::default()
        };
        let rows = context_rows(&left, &right);
        let shown: Vec<(&str, &str, &str, bool)> = rows
            .iter()
            .map(|r| {
                (
                    r.label.as_str(),
                    r.left.as_str(),
                    r.right.as_str(),
                    r.differs,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("torchscan", "0.3.0", "0.3.0", false),
                ("Device", "not recorded", "cpu", true),
                ("Threads", "1", "4", true),
                ("OMP_NUM_THREADS", "1", "not set", true),
                ("dtypes", "float32", "bfloat16", true),
            ]
        );
    }
}

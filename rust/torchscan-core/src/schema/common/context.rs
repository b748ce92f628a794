//! The context of a measurement: the flags it ran under, the machine, the versions and a rank's
//! place in a distributed job.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::value_meta::dtype_text;

/// PyTorch and backend settings that change numbers, recorded as they were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flags {
    /// `torch.is_grad_enabled()` when the report was made.
    #[serde(default)]
    pub grad_enabled: Option<bool>,
    /// `torch.is_inference_mode_enabled()` when the report was made.
    #[serde(default)]
    pub inference_mode: Option<bool>,
    /// `torch.backends.cuda.matmul.allow_tf32`.
    #[serde(default)]
    pub tf32_matmul: Option<bool>,
    /// `torch.backends.cudnn.allow_tf32`.
    #[serde(default)]
    pub tf32_cudnn: Option<bool>,
    /// `torch.backends.cudnn.benchmark`.
    #[serde(default)]
    pub cudnn_benchmark: Option<bool>,
    /// `torch.backends.cudnn.deterministic`.
    #[serde(default)]
    pub cudnn_deterministic: Option<bool>,
    /// `torch.get_float32_matmul_precision()`.
    #[serde(default)]
    pub float32_matmul_precision: Option<String>,
    /// `torch.are_deterministic_algorithms_enabled()`.
    #[serde(default)]
    pub deterministic_algorithms: Option<bool>,
    /// The autocast regions active, device type to dtype (`{"cpu": "torch.bfloat16"}`); empty
    /// when none is active, absent in reports that did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::schema::unique_keys_optional")]
    pub autocast: Option<BTreeMap<String, String>>,
}

impl Flags {
    /// The autocast regions as text (`cpu bfloat16, cuda float16`, or `off`), `None` when not
    /// recorded.
    pub fn autocast_text(&self) -> Option<String> {
        self.autocast.as_ref().map(|regions| {
            if regions.is_empty() {
                return "off".to_owned();
            }
            regions
                .iter()
                .map(|(device, dtype)| format!("{device} {}", dtype_text(dtype)))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

/// Where and with what a report was made. Never tensor values, file paths or reprs of user objects.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// The torchscan version that wrote the report.
    pub torchscan_version: String,
    /// `torch.__version__`, when torch was involved.
    #[serde(default)]
    pub torch_version: Option<String>,
    /// The Python version, when Python was involved.
    #[serde(default)]
    pub python_version: Option<String>,
    /// Operating system and architecture, for example `Linux-6.1-x86_64`.
    #[serde(default)]
    pub platform: Option<String>,
    /// The CPU model name.
    #[serde(default)]
    pub cpu_model: Option<String>,
    /// The device measured or analysed, for example `cpu` or `cuda:0`.
    #[serde(default)]
    pub device: Option<String>,
    /// The device's name, for example `NVIDIA H200`.
    #[serde(default)]
    pub device_name: Option<String>,
    /// `torch.get_num_threads()`, recorded, never changed.
    #[serde(default)]
    pub torch_threads: Option<u64>,
    /// `torch.get_num_interop_threads()`.
    #[serde(default)]
    pub torch_interop_threads: Option<u64>,
    /// Thread-related environment variables that were set (`OMP_NUM_THREADS`, `MKL_NUM_THREADS`, ...).
    #[serde(default)]
    #[serde(deserialize_with = "crate::schema::unique_keys")]
    pub thread_env: BTreeMap<String, String>,
    /// Settings that change numbers.
    #[serde(default)]
    pub flags: Flags,
    /// Floating-point dtypes involved, as PyTorch names them, for example `torch.float32`.
    /// Where operators were counted (`flops` and `benchmark` reports), the dtypes the counted
    /// operators computed in come first, largest FLOP share first, then the others by name;
    /// elsewhere they are sorted by name.
    #[serde(default)]
    pub dtypes: Vec<String>,
    /// For analyses (and `flops` reports of one module): the model's class, qualified as
    /// torchscan 0.2 wrote it (`torchvision.models.resnet.ResNet`: `__module__.__qualname__`).
    #[serde(default)]
    pub model_type: Option<String>,
    /// The model's training flag before the report was made (it is restored afterwards).
    #[serde(default)]
    pub training_before: Option<bool>,
    /// For analyses: how the model was run, `evaluation_no_grad` (evaluation mode, gradients
    /// disabled).
    #[serde(default)]
    pub execution_mode: Option<String>,
    /// For analyses: the devices of the model's parameters and buffers and of the input tensors,
    /// sorted.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Where the report was made in a `torch.distributed` job: this process's rank, local rank,
    /// the world size, the backend and the host. Absent outside a distributed job, and in
    /// reports written before it was recorded (after 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<DistributedContext>,
}

/// How the process group that aligned the ranks came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessGroupOrigin {
    /// The caller had initialised `torch.distributed`; torchscan used its default group.
    Existing,
    /// `RANK` and `WORLD_SIZE` said so but no group was initialised: torchscan initialised one
    /// from the environment (`env://`) for its own barriers and destroyed it afterwards.
    Created,
}

/// A rank's place in a `torch.distributed` job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributedContext {
    /// This process's global rank, below `world_size`.
    pub rank: u64,
    /// This process's rank on its host (`LOCAL_RANK`), below `world_size`.
    pub local_rank: u64,
    /// The number of ranks in the job (at least 1).
    pub world_size: u64,
    /// The process group's backend, for example `gloo` or `nccl`.
    pub backend: String,
    /// The host name of the machine this rank ran on.
    pub host: String,
    /// Whether the process group was the caller's or torchscan's own.
    pub process_group: ProcessGroupOrigin,
    /// A random id that rank 0 drew for this measurement and every rank recorded: reports with
    /// different ids come from different measurements and are never merged.
    pub measurement_id: String,
}

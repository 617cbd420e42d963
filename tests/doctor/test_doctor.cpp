// rcuda doctor: the architecture rules against NVIDIA's compatibility rules, and the report on
// the machine the tests run on (which may have no GPU and no driver: then CUDA must be
// reported unavailable with a reason, and nothing may FAIL).
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "rcuda/backend/cpu.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/doctor.h"

namespace rcuda::doctor {
namespace {

TEST(DoctorArchitectures, MachineCodeRunsOnSameMajorAndNewerMinor) {
  const std::string archs = "80-real,90-real,90-virtual";
  EXPECT_TRUE(architecture_coverage(archs, 8, 0).machine_code);
  EXPECT_TRUE(architecture_coverage(archs, 8, 6).machine_code);  // sm_80 cubin on an A40
  EXPECT_TRUE(architecture_coverage(archs, 9, 0).machine_code);
  EXPECT_EQ(architecture_coverage(archs, 9, 0).detail, "sm_90 machine code");
  EXPECT_FALSE(architecture_coverage(archs, 7, 5).machine_code);  // Turing: nothing
  EXPECT_FALSE(architecture_coverage(archs, 7, 5).ptx);
  const ArchitectureCoverage blackwell = architecture_coverage(archs, 10, 0);
  EXPECT_FALSE(blackwell.machine_code);  // no sm_100 cubin ...
  EXPECT_TRUE(blackwell.ptx);            // ... but compute_90 PTX JIT-compiles
  EXPECT_NE(blackwell.detail.find("compute_90 PTX"), std::string::npos);
  EXPECT_FALSE(architecture_coverage("80-real,90-real", 10, 0).ptx);  // -real has no PTX
}

// cuDNN runs a build on the same major at the same or a newer minor (Note [cuDNN versions]).
TEST(DoctorCudnnVersion, SameMajorAndNoOlderMinor) {
  EXPECT_EQ(cudnn_compatibility("9.19.0", "9.19.0").status, Status::Pass);
  EXPECT_EQ(cudnn_compatibility("9.19.0", "9.19.1").status, Status::Pass);
  EXPECT_EQ(cudnn_compatibility("9.14.0", "9.19.0").status, Status::Pass);
  EXPECT_TRUE(cudnn_compatibility("9.14.0", "9.19.0").fix.empty());
  // The GPU machine's case: headers of 9.19 at build time, 9.14 at run time.
  const CudnnCompatibility older = cudnn_compatibility("9.19.0", "9.14.0");
  EXPECT_EQ(older.status, Status::Warn);
  EXPECT_NE(older.detail.find("9.19.0"), std::string::npos);
  EXPECT_NE(older.detail.find("9.14.0"), std::string::npos);
  EXPECT_NE(older.detail.find("older"), std::string::npos);
  EXPECT_NE(older.fix.find(">= 9.19"), std::string::npos);
  EXPECT_NE(older.fix.find("rebuild"), std::string::npos);
  EXPECT_EQ(cudnn_compatibility("9.19.2", "9.19.1").status, Status::Warn);
  const CudnnCompatibility other = cudnn_compatibility("9.19.0", "8.9.7");
  EXPECT_EQ(other.status, Status::Fail);
  EXPECT_NE(other.fix.find("install cuDNN 9"), std::string::npos);
  EXPECT_EQ(cudnn_compatibility("9.19.0", "10.0.0").status, Status::Fail);
  EXPECT_EQ(cudnn_compatibility("9.19.0", "").status, Status::Fail);
  EXPECT_EQ(cudnn_compatibility("9.19.0", "9.x").status, Status::Fail);
}

TEST(DoctorArchitectures, PlainNumbersAreRealAndVirtualSuffixesAreSpecific) {
  EXPECT_TRUE(architecture_coverage("86", 8, 9).machine_code);
  EXPECT_TRUE(architecture_coverage("86", 12, 0).ptx);
  EXPECT_TRUE(architecture_coverage("90a-real", 9, 0).machine_code);
  EXPECT_FALSE(
      architecture_coverage("90a", 10, 0).ptx);  // arch-specific PTX does not carry forward
  EXPECT_TRUE(architecture_coverage("100f-real", 10, 3).machine_code);
  EXPECT_TRUE(architecture_coverage("90-virtual", 9, 0).ptx);
  EXPECT_FALSE(architecture_coverage("90-virtual", 9, 0).machine_code);
  EXPECT_TRUE(architecture_coverage("75;80", 8, 0).machine_code);  // CMake's ';' list
}

TEST(DoctorArchitectures, SpecialValues) {
  EXPECT_TRUE(architecture_coverage("all", 12, 0).machine_code);
  EXPECT_TRUE(architecture_coverage("all-major", 8, 6).ptx);
  EXPECT_FALSE(architecture_coverage("native", 9, 0).known);
  EXPECT_FALSE(architecture_coverage("", 9, 0).known);
  EXPECT_FALSE(architecture_coverage("sm_90", 9, 0).known);
}

TEST(DoctorVersions, CudaVersionStrings) {
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(0), "");
}

const Check* find(const Report& r, const std::string& id) {
  for (const Check& c : r.checks)
    if (c.id == id) return &c;
  return nullptr;
}

TEST(DoctorReport, DescribesThisMachineAndNeverFailsWithoutAGpu) {
  const Report r = run_doctor();
  EXPECT_FALSE(r.os.empty());
  EXPECT_GE(r.logical_cores, 1);
  EXPECT_GE(r.usable_cores, 1);
  EXPECT_EQ(r.blas, cpu::blas_info());
  EXPECT_EQ(r.cuda_built, cuda::is_built());
  ASSERT_NE(find(r, "cpu_gemm"), nullptr);
  EXPECT_EQ(find(r, "cpu_gemm")->status, Status::Pass) << find(r, "cpu_gemm")->detail;
  for (const char* id : {"cuda_build", "driver", "devices", "architecture", "context", "kernel",
                         "cublas_gemm", "cudnn_conv", "round_trip", "memory_pool", "mig"})
    EXPECT_NE(find(r, id), nullptr) << id;
  for (const Check& c : r.checks) {
    EXPECT_FALSE(c.title.empty()) << c.id;
    if (c.status == Status::Warn || c.status == Status::Fail) {
      EXPECT_FALSE(c.fix.empty()) << c.id;
    }
  }
  ASSERT_EQ(r.libraries.size(), 3u);
  EXPECT_EQ(r.libraries[0].name, "cuBLAS");
  if (cuda::device_count() == 0) {
    EXPECT_FALSE(r.cuda_available);
    EXPECT_FALSE(r.cuda_unavailable_reason.empty());  // says why: not built, no driver, no device
    EXPECT_TRUE(r.devices.empty());
    EXPECT_FALSE(has_failures(r));
    EXPECT_EQ(find(r, "kernel")->status, Status::Skip);
  } else {
    EXPECT_TRUE(r.cuda_available);
    EXPECT_EQ(static_cast<int>(r.devices.size()), cuda::device_count());
    EXPECT_EQ(find(r, "kernel")->status, Status::Pass) << find(r, "kernel")->detail;
    EXPECT_EQ(find(r, "cublas_gemm")->status, Status::Pass) << find(r, "cublas_gemm")->detail;
    EXPECT_EQ(find(r, "round_trip")->status, Status::Pass);
    EXPECT_EQ(find(r, "memory_pool")->status, Status::Pass) << find(r, "memory_pool")->detail;
  }
}

TEST(DoctorReport, JsonHasTheSchemaFields) {
  Report r = run_doctor();
  r.checks.push_back({"kernel", "a kernel runs", Status::Fail, "boom", "fix it", 0});
  const nlohmann::json j = nlohmann::json::parse(to_json(r));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["ok"], false);
  for (const char* key :
       {"os", "kernel", "arch", "cpu_model", "logical_cores", "usable_cores", "blas"})
    EXPECT_TRUE(j["system"].contains(key)) << key;
  EXPECT_EQ(j["cuda"]["built"], cuda::is_built());
  EXPECT_EQ(j["cuda"]["available"], r.cuda_available);
  if (!r.cuda_visible_devices) {
    EXPECT_TRUE(j["cuda"]["visible_devices"].is_null());
  }
  const nlohmann::json& last = j["checks"].back();
  EXPECT_EQ(last["status"], "FAIL");
  EXPECT_EQ(last["device"], 0);
  EXPECT_EQ(last["fix"], "fix it");
  EXPECT_EQ(j["summary"]["fail"].get<int>(), 1 + (has_failures(run_doctor()) ? 1 : 0));
}

TEST(DoctorReport, MigEnabledWithoutAMigInstanceSelectedWarns) {
  setenv("RCUDA_NVML_LIBRARY", RCUDA_FAKE_NVML_PATH, 1);
  setenv("FAKE_NVML_MIG", "1", 1);
  const Report on = run_doctor({/*gpu_checks=*/false});
  setenv("FAKE_NVML_MIG", "0", 1);
  const Report off = run_doctor({false});
  unsetenv("FAKE_NVML_MIG");
  unsetenv("RCUDA_NVML_LIBRARY");
  if (on.cuda_visible_devices && on.cuda_visible_devices->find("MIG-") != std::string::npos)
    GTEST_SKIP() << "CUDA_VISIBLE_DEVICES selects a MIG instance";
  EXPECT_EQ(find(on, "mig")->status, Status::Warn) << find(on, "mig")->detail;
  EXPECT_NE(find(on, "mig")->fix.find("CUDA_VISIBLE_DEVICES=MIG-"), std::string::npos);
  EXPECT_EQ(find(off, "mig")->status, Status::Pass) << find(off, "mig")->detail;
  EXPECT_EQ(on.nvidia_driver, "999.99.99");
}

TEST(DoctorReport, LeavesTheCallersCurrentDeviceAsItWas) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  const int last = cuda::device_count() - 1;  // the checks visit every device, ending on it
  cuda::set_device(0);
  doctor::run_doctor();
  EXPECT_EQ(cuda::current_device(), 0);
  cuda::set_device(last);
  doctor::run_doctor();
  EXPECT_EQ(cuda::current_device(), last);
  cuda::set_device(0);
}

TEST(DoctorReport, FindCudnnAgreesWithTheReport) {
  const doctor::Library cudnn = doctor::find_cudnn();
  const doctor::Report r = doctor::run_doctor({false});
  EXPECT_EQ(cudnn.found, r.libraries.at(1).found);
  EXPECT_EQ(r.libraries.at(1).name, "cuDNN");
  EXPECT_EQ(cudnn.version, r.libraries.at(1).version);
  EXPECT_EQ(cudnn.path, r.libraries.at(1).path);
}

TEST(DoctorBlas, ReportsOpenBlasAndItsThreads) {
  const cpu::BlasDetails d = cpu::blas_details();
  EXPECT_FALSE(d.library_path.empty());
  if (d.name == "OpenBLAS") {
    EXPECT_FALSE(d.version.empty());
    EXPECT_GE(d.num_threads, 1);
    EXPECT_NE(cpu::blas_info().find("OpenBLAS"), std::string::npos);
  }
}

}  // namespace
}  // namespace rcuda::doctor

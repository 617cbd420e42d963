test_that("printing matches torch for R", {
  expect_equal(format(torch_tensor(c(1, 2, 3))), c("torch_tensor", " 1", " 2", " 3", "[ CPUFloatType{3} ]"))
  expect_equal(format(torch_tensor(matrix(c(1.5, 2, 3, 4), 2))),
               c("torch_tensor", " 1.5000  3.0000", " 2.0000  4.0000", "[ CPUFloatType{2,2} ]"))
  expect_equal(format(torch_tensor(matrix(1:6, 2))),
               c("torch_tensor", " 1  3  5", " 2  4  6", "[ CPULongType{2,3} ]"))
  expect_equal(format(torch_tensor(c(TRUE, FALSE))), c("torch_tensor", " 1", " 0", "[ CPUBoolType{2} ]"))
  expect_equal(tail(format(torch_zeros(0)), 1), "[ CPUFloatType{0} ]")
  expect_equal(format(torch_tensor(2.5)$squeeze()), c("torch_tensor", "2.5", "[ CPUFloatType{} ]"))
  expect_equal(tail(format(torch_ones(2, 2, 2, dtype = torch_double())), 1), "[ CPUDoubleType{2,2,2} ]")
  expect_true("(2,.,.) = " %in% format(torch_ones(2, 2, 2)))
  expect_output(print(torch_ones(2)), "torch_tensor\n 1\n 1\n[ CPUFloatType{2} ]", fixed = TRUE)
  long <- format(torch_ones(100))
  expect_true(any(grepl("the output was truncated", long)))
  expect_output(str(torch_ones(2, 3)), "Float [1:2, 1:3]", fixed = TRUE)
  expect_output(print(torch_float()), "torch_Float")
  expect_output(print(torch_device("cuda:1")), "torch_device(type='cuda', index=1)", fixed = TRUE)
})

test_that("CUDA tensors print a CUDA footer", {
  skip_if_cuda_not_available()
  expect_equal(tail(format(torch_ones(3, 3, device = "cuda")), 1), "[ CUDAFloatType{3,3} ]")
})

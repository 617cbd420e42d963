library(testthat)
library(rcuda)

test_check("rcuda")

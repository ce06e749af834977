package cufile

// SkipOrFail is skipOrFail for the tests of package cufile_test.
var SkipOrFail = skipOrFail

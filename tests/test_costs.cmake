# The gtest-discovered tests that take the longest (seconds on the 2-core CI machine), as ctest
# COSTs: `ctest -j` starts the costliest first, so that no long test is left to run alone at
# the end of the suite. A clean build has no Testing/Temporary/CTestCostData.txt, ctest's record of
# the last run's times, which replaces these once the suite has run. Included by ctest after
# the gtest include files (tests/CMakeLists.txt, TEST_INCLUDE_FILES); the add_test tests have
# their COSTs in tests/CMakeLists.txt. A name here that no longer exists sets nothing.
set(_partita_test_costs
  "CliClusterTest.RaysCommandsRunStopAndResumeAJobToTheWeightsOfAnUninterruptedRun" 58
  "ClusterJobTest.ANodeKilledFiveTimesDuringAJobCostsRestartsNotResults" 39
  "ClusterJobTest.OnSeparateHostsAKilledNodeCostsARestartNotResults" 37
  "ClusterJobTest.AFrozenNodeIsDetectedAndTheJobRecoversWithoutIt" 29
  "ExportCommandTest.BadRunFoldersAreNamed" 19
  "LinkJobTest.AKilledDaemonFailsTheJobNamingIt" 15
  "JobLifetimeTest.AJobThatLostADaemonLeavesNothingOnTheOther" 14
  "TlsTest.TransportRefusesAPlaintextHelloAndServesAMemberOfTheCluster" 12
  "ClusterJobTest.NodesTrainOnStagedCopiesOfOnlyTheirPartsCachedAcrossJobs" 12
  "TlsTest.IdleConnectionsAreClosedByTheDeadlineWhileAMemberIsServed" 11
  "CoraTest.GraphSageReachesPublishedAccuracy" 11
  "PrometheusScrapeTest.APrometheusServerScrapesTheHeadsStepsAndFigures" 11
  "ClusterTest.BadInputIsNamed" 10)
list(LENGTH _partita_test_costs _n)
math(EXPR _last "${_n} - 1")
foreach(_i RANGE 0 ${_last} 2)
  math(EXPR _j "${_i} + 1")
  list(GET _partita_test_costs ${_i} _name)
  list(GET _partita_test_costs ${_j} _cost)
  set_tests_properties("${_name}" PROPERTIES COST ${_cost})
endforeach()

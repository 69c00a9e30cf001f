# replay.cmake - the replay server, driver and run controller (included from
# replayer/CMakeLists.txt):
#   preplay_replay_core  protocol, block execution, DB pool, peer calls,
#                        server, driver, results (used by the CLI and tests)
#   cmd_replay / cmd_drive / cmd_run / cmd_remote_agent go into preplay_replay_cli.
add_library(preplay_replay_core STATIC
  replay_proto.c replay_exec.c replay_db.c replay_db_pg.c replay_peers.c replay_gate.c replay_server.c replay_loop.c replay_nodeps.c
  replay_drive.c
  replay_results.c)
target_include_directories(preplay_replay_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(preplay_replay_core PUBLIC preplay_replayer_base preplay_formats preplay_results preplay_stats
  PkgConfig::JANSSON Threads::Threads m)
if(MARIADB_FOUND)
  target_compile_definitions(preplay_replay_core PRIVATE PREPLAY_HAVE_MARIADB=1)
  target_link_libraries(preplay_replay_core PUBLIC PkgConfig::MARIADB)
endif()
if(LIBPQ_FOUND)
  target_compile_definitions(preplay_replay_core PRIVATE PREPLAY_HAVE_LIBPQ=1)
  target_link_libraries(preplay_replay_core PUBLIC PkgConfig::LIBPQ)
endif()

target_sources(preplay_replay_cli PRIVATE replay_cli.c drive_cli.c run_cli.c run_config.c run_session.c
  run_remote.c run_placement.c run_counters.c run_db_pg.c run_failures.c
  duet_cli.c duet_config.c duet_side.c duet_barrier.c duet_report.c)
target_link_libraries(preplay_replay_cli PUBLIC preplay_replay_core preplay_counters)

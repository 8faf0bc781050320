"""Static leaderboard (installed as matbench.leaderboard). Built from validated results files;
the builder and templates arrive with the leaderboard issue."""

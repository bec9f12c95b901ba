"""`verify_program_file`: an untrusted program file compiled and run in a child process
with limits (`verdict`), and that child (`child`)."""

from selfforge.cli import main

main()

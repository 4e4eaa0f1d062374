from selfforge.cli.launch import main

main()

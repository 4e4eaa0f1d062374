from selfforge.launch import main

main()

from ehrguard.cli import main

main()
